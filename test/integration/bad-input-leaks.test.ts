/**
 * Bad input at the process level: the three plugin binaries and `clusterprofile kubeconfig`, as real child processes.
 * A password in a URL (issuerURL for tenant-cert and oidc, the API server for token-request, the hub and a profile's
 * proxy for `clusterprofile kubeconfig`) never reaches stderr, whatever shape the URL has; a 100 KB value is never
 * quoted back whole (stderr stays small); every run ends with a stable code, no stdout and no stack trace.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildProfile } from '../helpers/library-fixtures.js';
import { runNode, type NodeRunResult } from '../helpers/process.js';
import { createTestCa, type TestCa } from '../helpers/tls.js';

const BIN = join(import.meta.dirname, '../../bin');
const SECRET = 's3cretpw';
const BIG = 'a'.repeat(100_000);
/** A URL that parses and reaches nothing, 100 KB long. */
const BIG_URL = `https://127.0.0.1:1/${BIG}`;
/** What a refusal may print at most: the code, the message with its values quoted (bounded), path and hint. */
const STDERR_BOUND = 2_000;

/** URLs carrying {@link SECRET}: parseable, unparseable, with a slash or a space inside the password. */
const PASSWORD_URLS = [
  `https://user:${SECRET}@127.0.0.1:1`,
  `http://user:${SECRET}@127.0.0.1:1`,
  `https://user:${SECRET}@127.0.0.1:99999`,
  `https://user:${SECRET}/x@127.0.0.1:1`,
  `https://user:${SECRET} x@127.0.0.1:1`,
  `https://user:${SECRET}@`,
];

let dir: string;
let ca: TestCa;
let keyFile: string;
let secretFile: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cpc-leaks-'));
  ca = await createTestCa('leaks-ca');
  keyFile = join(dir, 'consumer.key');
  writeFileSync(keyFile, generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }), {
    mode: 0o600,
  });
  secretFile = join(dir, 'client.secret');
  writeFileSync(secretFile, 'client-secret', { mode: 0o600 });
});

function execInfo(cluster: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: { interactive: false, cluster },
  });
}

function plugin(name: string, args: readonly string[], cluster: Record<string, unknown>): Promise<NodeRunResult> {
  const cacheDir = mkdtempSync(join(dir, 'cache-'));
  return runNode(join(BIN, `clusterprofile-${name}.mjs`), [...args, '--cache-dir', cacheDir, '--timeout', '5'], {
    env: { KUBERNETES_EXEC_INFO: execInfo(cluster), HOME: dir },
  });
}

/** A clean refusal: a stable code, nothing on stdout, no stack, no secret, bounded stderr. */
function expectClean(run: NodeRunResult, label: string): void {
  expect(run.code, `${label}: ${run.stderr}`).not.toBe(0);
  expect(run.signal, label).toBeNull();
  expect(run.stdout, label).toBe('');
  expect(run.stderr, label).toMatch(/ERR_[A-Z_]+/);
  expect(run.stderr, label).not.toMatch(/\n\s+at /);
  expect(run.stderr, label).not.toContain(SECRET);
  expect(run.stderr.length, `${label}: stderr of ${run.stderr.length} characters`).toBeLessThan(STDERR_BOUND);
}

describe('clusterprofile-tenant-cert', () => {
  const args = () => ['--cluster-id', 'consumer-1', '--key-file', keyFile];
  const config = (extra: Record<string, unknown>) => ({
    issuerURL: 'https://127.0.0.1:1',
    issuerCA: ca.certBase64,
    providerClusterID: 'member-1',
    ...extra,
  });

  it('never prints the password of an issuerURL', async () => {
    for (const issuerURL of PASSWORD_URLS) {
      expectClean(
        await plugin('tenant-cert', args(), { server: 'https://127.0.0.1:1', config: config({ issuerURL }) }),
        issuerURL,
      );
    }
  });

  it('never quotes a 100 KB value back whole', async () => {
    for (const key of ['issuerURL', 'providerClusterID', 'issuerCA', 'clientCA']) {
      expectClean(
        await plugin('tenant-cert', args(), { server: 'https://127.0.0.1:1', config: config({ [key]: BIG }) }),
        key,
      );
    }
    expectClean(
      await plugin('tenant-cert', args(), { server: 'https://127.0.0.1:1', config: config({ issuerURL: BIG_URL }) }),
      'a long issuerURL',
    );
  });
});

describe('clusterprofile-oidc', () => {
  const args = ['--grant', 'client_credentials', '--client-secret-file'];
  const config = (extra: Record<string, unknown>) => ({
    issuerURL: 'https://127.0.0.1:1',
    issuerCA: ca.certBase64,
    clientID: 'fleet',
    audience: 'member',
    ...extra,
  });

  it('never prints the password of the issuer URL', async () => {
    for (const issuerURL of PASSWORD_URLS) {
      expectClean(
        await plugin('oidc', [...args, secretFile], { server: 'https://127.0.0.1:1', config: config({ issuerURL }) }),
        issuerURL,
      );
    }
  });

  it('never quotes a 100 KB value back whole', async () => {
    for (const key of ['issuerURL', 'token', 'clientID', 'audience', 'issuerCA']) {
      expectClean(
        await plugin('oidc', [...args, secretFile], { server: 'https://127.0.0.1:1', config: config({ [key]: BIG }) }),
        key,
      );
    }
    expectClean(
      await plugin('oidc', [...args, secretFile], {
        server: 'https://127.0.0.1:1',
        config: config({ issuerURL: BIG_URL }),
      }),
      'a long issuerURL',
    );
  });
});

describe('clusterprofile-token-request', () => {
  let bootstrap: string;
  beforeAll(() => {
    bootstrap = join(dir, 'bootstrap.kubeconfig');
    writeFileSync(
      bootstrap,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'c',
        clusters: [
          { name: 'c', cluster: { server: 'https://127.0.0.1:1', 'certificate-authority-data': ca.certBase64 } },
        ],
        users: [{ name: 'u', user: { token: 'bootstrap-token' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      }),
    );
  });
  const config = (extra: Record<string, unknown> = {}) => ({
    namespace: 'fleet',
    serviceAccount: 'fleet-workload',
    ...extra,
  });

  it('never prints the password of the API server URL', async () => {
    for (const server of PASSWORD_URLS) {
      expectClean(
        await plugin('token-request', ['--bootstrap-kubeconfig', bootstrap], {
          server,
          'certificate-authority-data': ca.certBase64,
          config: config(),
        }),
        server,
      );
    }
  });

  it('never quotes a 100 KB value back whole', async () => {
    expectClean(
      await plugin('token-request', ['--bootstrap-kubeconfig', bootstrap], { server: BIG, config: config() }),
      'server',
    );
    expectClean(
      await plugin('token-request', ['--bootstrap-kubeconfig', bootstrap], { server: BIG_URL, config: config() }),
      'a long server URL',
    );
    for (const key of ['namespace', 'serviceAccount', 'expirationSeconds']) {
      expectClean(
        await plugin('token-request', ['--bootstrap-kubeconfig', bootstrap], {
          server: 'https://127.0.0.1:1',
          config: config({ [key]: BIG }),
        }),
        key,
      );
    }
  });
});

describe('clusterprofile kubeconfig', () => {
  let providers: string;
  beforeAll(() => {
    providers = join(dir, 'providers.json');
    writeFileSync(
      providers,
      JSON.stringify({
        providers: [
          {
            name: 'test-provider-1',
            execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'plugin', provideClusterInfo: true },
            profileSourcedEnvVarsPolicy: 'AppendIfNotExists',
            profileSourcedCLIArgsPolicy: 'Append',
          },
        ],
      }),
    );
  });
  const cli = (args: readonly string[], env: Record<string, string> = {}) =>
    runNode(join(BIN, 'clusterprofile.mjs'), ['kubeconfig', '--clusterprofile-provider-file', providers, ...args], {
      env: { HOME: dir, ...env },
    });

  function profileFile(mutate: (cluster: Record<string, unknown>) => void): string {
    const profile = buildProfile();
    mutate(profile.status!.accessProviders![0]!.cluster as unknown as Record<string, unknown>);
    const file = mkdtempSync(join(dir, 'profile-'));
    writeFileSync(join(file, 'profile.yaml'), stringify(profile));
    return join(file, 'profile.yaml');
  }

  it("never prints the password of the hub's server or of a profile's proxy", async () => {
    for (const url of PASSWORD_URLS) {
      const hub = join(mkdtempSync(join(dir, 'hub-')), 'kubeconfig');
      writeFileSync(
        hub,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          'current-context': 'c',
          clusters: [{ name: 'c', cluster: { server: url, 'certificate-authority-data': ca.certBase64 } }],
          users: [{ name: 'u', user: { token: 'hub-token' } }],
          contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
        }),
      );
      expectClean(await cli(['-n', 'fleet', '--name', 'spoke-1'], { KUBECONFIG: hub }), `hub ${url}`);
      const proxy = profileFile((cluster) => {
        cluster['proxy-url'] = url.replace('127.0.0.1:1', 'proxy host');
      });
      expectClean(await cli(['--profile', proxy]), `proxy ${url}`);
    }
  });

  it('never quotes a 100 KB value back whole', async () => {
    const cases: [string, (cluster: Record<string, unknown>) => void][] = [
      ['proxy-url', (cluster) => (cluster['proxy-url'] = `${BIG} x`)],
      [
        'an env name',
        (cluster) =>
          (cluster.extensions = [
            { name: 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs', extension: { [BIG]: 'x' } },
          ]),
      ],
      [
        'an extension name twice',
        (cluster) =>
          (cluster.extensions = [
            { name: BIG, extension: {} },
            { name: BIG, extension: {} },
          ]),
      ],
      ['certificate-authority-data', (cluster) => (cluster['certificate-authority-data'] = `${BIG}!`)],
    ];
    for (const [label, mutate] of cases) {
      expectClean(await cli(['--profile', profileFile(mutate)]), label);
    }
  });
});
