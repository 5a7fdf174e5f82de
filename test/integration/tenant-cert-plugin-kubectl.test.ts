// kubectl exec'ing the tenant-cert plugin against a local HTTPS "API server" that requires a client certificate
// signed by the issuer's client-ca.crt:
//  1. kubeconfig with exec + provideClusterInfo + the exec extension carrying issuerURL / issuerCA / providerClusterID
//     (the plugin does the handshake with a real issuer process);
//  2. the manual flow (tenant nonce → generate → accept, ours and Liqo-shaped) → `clusterprofile identity import
//     --kubeconfig` → kubectl with the rendered kubeconfig, no issuer running at all.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';
import {
  CLI,
  PLUGIN,
  cacheEntries,
  issuerConfig,
  runNode,
  startIssuer,
  type RunningIssuer,
} from '../helpers/tenant-cert-plugin-run.js';

const run = promisify(execFile);
const PROVIDER = 'member-1';
const CONSUMER = 'consumer-1';

let root: string;
let apiCa: TestCa;

async function kubectl(
  kubeconfig: string,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('kubectl', ['--kubeconfig', kubeconfig, ...args], {
      env: { PATH: process.env['PATH'], HOME: root },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** An HTTPS server (serving cert from `apiCa`) that requires a client certificate signed by `clientCaPem`. */
async function apiServer(clientCaPem: string): Promise<TestHttpsServer> {
  const serverCert = await apiCa.issueServerCert();
  return startHttpsServer({ ca: { ...apiCa, cert: clientCaPem }, serverCert, clientCert: 'require' });
}

async function cli(...args: string[]): Promise<string> {
  const result = await runNode(CLI, args);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-tc-kubectl-'));
  apiCa = await createTestCa('member-api-ca');
});

describe('kubectl → clusterprofile-tenant-cert → issuer', () => {
  let issuer: RunningIssuer;
  let server: TestHttpsServer;
  let dataDir: string;
  let keyFile: string;
  beforeAll(async () => {
    dataDir = join(root, 'issuer-data');
    keyFile = join(root, 'consumer.key');
    writeFileSync(join(root, 'consumer.pub'), await cli('keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256'));
    issuer = await startIssuer(dataDir, PROVIDER);
    await cli(
      'issuer',
      'trust',
      '--data-dir',
      dataDir,
      '--cluster-id',
      CONSUMER,
      '--public-key',
      join(root, 'consumer.pub'),
    );
    server = await apiServer(readFileSync(join(dataDir, 'client-ca.crt'), 'utf8'));
  });
  afterAll(async () => {
    await server?.close();
    await issuer?.stop();
  });

  it('kubectl gets a client certificate from the plugin and the server sees CN = our cluster ID', async () => {
    const cacheDir = join(root, 'cache');
    const kubeconfig = join(root, 'member-1.kubeconfig');
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: PROVIDER,
            cluster: {
              server: server.url,
              'certificate-authority-data': apiCa.certBase64,
              extensions: [
                {
                  name: 'client.authentication.k8s.io/exec',
                  extension: issuerConfig(issuer, readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'), PROVIDER),
                },
              ],
            },
          },
        ],
        users: [
          {
            name: CONSUMER,
            user: {
              exec: {
                apiVersion: 'client.authentication.k8s.io/v1',
                command: PLUGIN,
                args: [
                  '--cluster-id',
                  CONSUMER,
                  '--key-file',
                  keyFile,
                  '--cache-dir',
                  cacheDir,
                  '--identity-dir',
                  join(root, 'ids'),
                ],
                provideClusterInfo: true,
                interactiveMode: 'Never',
              },
            },
          },
        ],
        contexts: [{ name: PROVIDER, context: { cluster: PROVIDER, user: CONSUMER } }],
        'current-context': PROVIDER,
      }),
      { mode: 0o600 },
    );
    const first = await kubectl(kubeconfig, 'get', '--raw', '/version');
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ url: '/version', clientCert: { subjectCN: CONSUMER } });
    expect(cacheEntries(cacheDir)).toHaveLength(1);
    // The next kubectl run execs the plugin again: a cache hit, the same certificate.
    const second = await kubectl(kubeconfig, 'get', '--raw', '/healthz');
    expect(second.code, second.stderr).toBe(0);
    const fingerprints = server.requests.map((request) => request.clientCert?.fingerprint256);
    expect(new Set(fingerprints).size).toBe(1);
  });
});

describe('manual flow → identity import → kubectl (no issuer running)', () => {
  let dataDir: string;
  let keyFile: string;
  let server: TestHttpsServer;
  beforeAll(async () => {
    dataDir = join(root, 'manual-data');
    keyFile = join(root, 'manual.key');
    writeFileSync(join(root, 'manual.pub'), await cli('keygen', '--out', keyFile));
    // The provider sets its data dir up once (first serve), then works offline.
    await (await startIssuer(dataDir, PROVIDER)).stop();
    await cli(
      'issuer',
      'trust',
      '--data-dir',
      dataDir,
      '--cluster-id',
      CONSUMER,
      '--public-key',
      join(root, 'manual.pub'),
    );
    server = await apiServer(readFileSync(join(dataDir, 'client-ca.crt'), 'utf8'));
  });
  afterAll(async () => {
    await server?.close();
  });

  it.each([
    ['ours', [] as string[], []],
    ['Liqo-shaped', ['--liqo'], ['--liqo-compat']],
  ])(
    'an imported Identity (%s) is served by the plugin and the rendered kubeconfig works',
    async (flavour, generateFlags, acceptFlags) => {
      const dir = mkdtempSync(join(root, 'import-'));
      const nonce = (await cli('tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', CONSUMER)).trim();
      const tenant = await cli(
        'tenant',
        'generate',
        '--key-file',
        keyFile,
        '--cluster-id',
        CONSUMER,
        '--provider-cluster-id',
        PROVIDER,
        '--nonce',
        nonce,
        ...generateFlags,
      );
      writeFileSync(join(dir, 'tenant.yaml'), tenant);
      writeFileSync(join(dir, 'api-ca.crt'), apiCa.cert);
      const identity = await cli(
        'tenant',
        'accept',
        '--data-dir',
        dataDir,
        join(dir, 'tenant.yaml'),
        '--api-server-url',
        server.url,
        '--api-server-ca',
        join(dir, 'api-ca.crt'),
        ...acceptFlags,
      );
      expect(identity).toContain(
        flavour === 'ours' ? 'credentials.clusterprofile.io/v1alpha1' : 'authentication.liqo.io/v1beta1',
      );
      writeFileSync(join(dir, 'identity.yaml'), identity);

      const identityDir = join(dir, 'ids');
      const kubeconfig = join(dir, 'member.kubeconfig');
      // Ours from a file, Liqo's from stdin ("-").
      const viaStdin = flavour !== 'ours';
      const imported = await runNode(
        CLI,
        [
          'identity',
          'import',
          viaStdin ? '-' : join(dir, 'identity.yaml'),
          '--key-file',
          keyFile,
          '--cluster-id',
          CONSUMER,
          '--identity-dir',
          identityDir,
          '--kubeconfig',
          kubeconfig,
          '--plugin-command',
          PLUGIN,
        ],
        {},
        viaStdin ? identity : undefined,
      );
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout.trim()).toBe(join(identityDir, CONSUMER, `${PROVIDER}.yaml`));
      expect(statSync(imported.stdout.trim()).mode & 0o777).toBe(0o600);
      expect(statSync(kubeconfig).mode & 0o777).toBe(0o600);

      const before = server.requests.length;
      const result = await kubectl(kubeconfig, 'get', '--raw', '/version');
      expect(result.code, result.stderr).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ clientCert: { subjectCN: CONSUMER } });
      const seen = server.requests.slice(before);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((request) => request.clientCert?.subjectCN === CONSUMER)).toBe(true);
    },
  );

  it('refuses to import an Identity for another key', async () => {
    const other = join(root, 'other.key');
    await cli('keygen', '--out', other);
    const nonce = (await cli('tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', CONSUMER)).trim();
    const dir = mkdtempSync(join(root, 'wrong-'));
    writeFileSync(
      join(dir, 'tenant.yaml'),
      await cli(
        'tenant',
        'generate',
        '--key-file',
        keyFile,
        '--cluster-id',
        CONSUMER,
        '--provider-cluster-id',
        PROVIDER,
        '--nonce',
        nonce,
      ),
    );
    writeFileSync(
      join(dir, 'identity.yaml'),
      await cli('tenant', 'accept', '--data-dir', dataDir, join(dir, 'tenant.yaml')),
    );
    const result = await runNode(CLI, [
      'identity',
      'import',
      join(dir, 'identity.yaml'),
      '--key-file',
      other,
      '--identity-dir',
      join(dir, 'ids'),
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_BAD_CERTIFICATE');
    expect(result.stderr).toContain('different public key');
  });
});
