/**
 * token-request bootstrapped from tenant-cert, all real processes: `clusterprofile issuer serve` (embedded CA),
 * `clusterprofile keygen` + `issuer trust`, and the token-request binary whose bootstrap identity is the tenant-cert
 * certificate obtained in-process. The API server trusts the issuer's client-ca.crt and lets exactly that identity
 * (CN = consumer cluster ID) create tokens for one service account.
 */
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import {
  CLI,
  issuerConfig,
  PLUGIN,
  runNode,
  startIssuer,
  type RunningIssuer,
} from '../helpers/tenant-cert-plugin-run.js';
import { createTestCa } from '../helpers/tls.js';
import { otherUserProblem, stageBinaries, type StagedBinaries } from '../helpers/other-user.js';
import { runCommand } from '../helpers/process.js';

const BIN = join(import.meta.dirname, '../../bin/clusterprofile-token-request.mjs');
const PROVIDER = 'member-1';
const CONSUMER = 'hub-cluster';

/** Why the binary cannot run as another user here (that test then skips with it in its title). */
const OTHER_USER_PROBLEM = otherUserProblem();
let root: string;
let issuer: RunningIssuer;
let api: FakeKubeApi;
let keyFile: string;
let config: Record<string, unknown>;
let apiCaBase64: string;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-tr-tc-'));
  const dataDir = join(root, 'data');
  keyFile = join(root, 'consumer.key');
  const keygen = await runNode(CLI, ['keygen', '--out', keyFile, '--algorithm', 'ecdsa-p256']);
  expect(keygen.code, keygen.stderr).toBe(0);
  writeFileSync(`${keyFile}.pub`, keygen.stdout);
  issuer = await startIssuer(dataDir, PROVIDER);
  const trust = await runNode(CLI, [
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    CONSUMER,
    '--public-key',
    `${keyFile}.pub`,
  ]);
  expect(trust.code, trust.stderr).toBe(0);
  const ca = await createTestCa('member-api');
  apiCaBase64 = ca.certBase64;
  api = await startFakeKubeApi({
    ca,
    clientCaPem: readFileSync(join(dataDir, 'client-ca.crt'), 'utf8'),
    minters: { 'fleet/fleet-workload': [CONSUMER] },
    serviceAccounts: ['fleet/fleet-workload'],
  });
  config = {
    ...issuerConfig(issuer, readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'), PROVIDER),
    namespace: 'fleet',
    serviceAccount: 'fleet-workload',
    expirationSeconds: 600,
  };
});

afterAll(async () => {
  await issuer?.stop();
  await api?.close();
  rmSync(root, { recursive: true, force: true });
});

function execInfo(extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: {
      interactive: false,
      cluster: { server: api.url, 'certificate-authority-data': apiCaBase64, config: { ...config, ...extra } },
    },
  });
}

test('the tenant-cert identity mints the token; the certificate is cached for the next token', async () => {
  const cacheRoot = join(root, 'kubecache');
  const env = { KUBECACHEDIR: cacheRoot, KUBERNETES_EXEC_INFO: execInfo() };
  const result = await runNode(
    BIN,
    ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', keyFile],
    env,
  );
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const status = JSON.parse(result.stdout).status;
  expect(api.minted).toHaveLength(1);
  expect(status.token).toBe(api.minted[0]!.token);
  // The API server saw the tenant-cert certificate: CN = the consumer cluster ID.
  const tokenCalls = api.server.requests.filter((request) => request.url.endsWith('/token'));
  expect(tokenCalls[0]!.clientCert?.subjectCN).toBe(CONSUMER);
  // Both identities are cached in 0600 files: the token under token-request, the certificate under tenant-cert.
  expect(
    readdirSync(join(cacheRoot, 'clusterprofile', 'tenant-cert')).filter((name) => name.endsWith('.json')),
  ).toHaveLength(1);

  // A token for another service account re-uses the cached certificate: no second handshake at the issuer.
  api.options.minters['fleet/second'] = [CONSUMER];
  api.options.serviceAccounts.push('fleet/second');
  const handshakesBefore = issuer.output();
  const second = await runNode(BIN, ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', keyFile], {
    ...env,
    KUBERNETES_EXEC_INFO: execInfo({ serviceAccount: 'second' }),
  });
  expect(second.code, second.stderr).toBe(0);
  expect(api.minted.map((entry) => entry.serviceAccount)).toEqual(['fleet-workload', 'second']);
  expect(issuer.output()).toBe(handshakesBefore);
});

/** Handshakes the issuer has completed so far. */
const handshakes = (): number => issuer.output().split('certificate issued').length - 1;
/** The `clusterprofile-tenant-cert` binary as kubectl would run it for the same member cluster, with its default cache. */
const tenantCertAsKubectl = (cacheRoot: string) =>
  runNode(PLUGIN, ['--cluster-id', CONSUMER, '--key-file', keyFile], {
    KUBECACHEDIR: cacheRoot,
    KUBERNETES_EXEC_INFO: JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false, cluster: { server: api.url, 'certificate-authority-data': apiCaBase64, config } },
    }),
  });

test('the bootstrap and the clusterprofile-tenant-cert binary share one certificate: the binary serves what the bootstrap obtained', async () => {
  const cacheRoot = join(root, 'shared-cache');
  const minted = await runNode(BIN, ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', keyFile], {
    KUBECACHEDIR: cacheRoot,
    KUBERNETES_EXEC_INFO: execInfo(),
  });
  expect(minted.code, minted.stderr).toBe(0);
  const before = handshakes();
  const kubectl = await tenantCertAsKubectl(cacheRoot);
  expect(kubectl.code, kubectl.stderr).toBe(0);
  expect(handshakes()).toBe(before);
  const entries = readdirSync(join(cacheRoot, 'clusterprofile', 'tenant-cert')).filter((name) =>
    name.endsWith('.json'),
  );
  expect(entries).toHaveLength(1);
  const cached = JSON.parse(readFileSync(join(cacheRoot, 'clusterprofile', 'tenant-cert', entries[0]!), 'utf8')).status;
  expect(JSON.parse(kubectl.stdout).status.clientCertificateData).toBe(cached.clientCertificateData);
});

test("started together cold, kubectl's tenant-cert runs and the token-request bootstrap make one handshake (one lock)", async () => {
  const cacheRoot = join(root, 'cold-cache');
  const before = handshakes();
  const [token, ...kubectl] = await Promise.all([
    runNode(BIN, ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', keyFile], {
      KUBECACHEDIR: cacheRoot,
      KUBERNETES_EXEC_INFO: execInfo(),
    }),
    ...Array.from({ length: 4 }, () => tenantCertAsKubectl(cacheRoot)),
  ]);
  expect(token!.code, token!.stderr).toBe(0);
  for (const run of kubectl) expect(run.code, run.stderr).toBe(0);
  expect(handshakes() - before).toBe(1);
  expect(new Set(kubectl.map((run) => JSON.parse(run.stdout).status.clientCertificateData)).size).toBe(1);
});

test("an untrusted consumer gets the issuer's refusal, exit 1, empty stdout", async () => {
  const result = await runNode(BIN, ['--bootstrap', 'tenant-cert', '--cluster-id', 'stranger', '--key-file', keyFile], {
    KUBECACHEDIR: join(root, 'other-cache'),
    KUBERNETES_EXEC_INFO: execInfo(),
  });
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr).toContain('ERR_TOKEN_REQUEST_BOOTSTRAP');
  expect(result.stderr).toContain('ERR_TENANT_UNKNOWN_CONSUMER');
  expect(result.stderr).toContain('clusterprofile issuer trust --cluster-id stranger');
});

describe('without HOME (a pod that sets none)', () => {
  test('--identity-dir and KUBECACHEDIR: the token is minted, the certificate cached under KUBECACHEDIR', async () => {
    const cacheRoot = join(root, 'no-home-cache');
    const result = await runNode(
      BIN,
      [
        '--bootstrap',
        'tenant-cert',
        '--cluster-id',
        CONSUMER,
        '--key-file',
        keyFile,
        '--identity-dir',
        join(root, 'no-home-identities'),
      ],
      { HOME: undefined, KUBECACHEDIR: cacheRoot, KUBERNETES_EXEC_INFO: execInfo() },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).status.token).toBe(api.minted.at(-1)!.token);
    expect(
      readdirSync(join(cacheRoot, 'clusterprofile', 'tenant-cert')).filter((name) => name.endsWith('.json')),
    ).toHaveLength(1);
  });

  test("no --identity-dir: the user's home directory from the user database, as the plugins' cache does", async () => {
    const result = await runNode(BIN, ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', keyFile], {
      HOME: undefined,
      KUBECACHEDIR: join(root, 'passwd-home-cache'),
      KUBERNETES_EXEC_INFO: execInfo(),
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  test('--help lists --identity-dir (the flag the error names)', async () => {
    const help = await runNode(BIN, ['--help'], { HOME: undefined });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--identity-dir DIR');
  });

  /**
   * The binary as uid 65532, which has no entry in the user database (a distroless pod), without HOME: staged in a
   * 0755 directory that user can reach, wherever the checkout lives.
   */
  let stagedForPod: StagedBinaries | undefined;
  function asPodUser(
    args: readonly string[],
    env: Record<string, string>,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const staged = (stagedForPod ??= stageBinaries());
    return runCommand(
      'setpriv',
      [
        '--reuid=65532',
        '--regid=65532',
        '--clear-groups',
        '--',
        staged.node,
        staged.bin('clusterprofile-token-request.mjs'),
        ...args,
      ],
      {
        env: { PATH: process.env['PATH'], KUBERNETES_EXEC_INFO: execInfo(), ...env },
      },
    );
  }

  test.skipIf(OTHER_USER_PROBLEM !== undefined)(
    `no home at all (run as a user without a passwd entry${OTHER_USER_PROBLEM === undefined ? '' : ` — skipped: ${OTHER_USER_PROBLEM}`}): a usage error naming --identity-dir, then KUBECACHEDIR — flags and variables token-request has`,
    async () => {
      expect(readFileSync('/etc/passwd', 'utf8')).not.toMatch(/^[^:]*:[^:]*:65532:/m);
      const pod = join(root, 'pod');
      mkdirSync(pod);
      chmodSync(root, 0o755);
      chownSync(pod, 65532, 65532);
      chmodSync(pod, 0o700);
      const noIdentityDir = await asPodUser(
        ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', keyFile],
        { KUBECACHEDIR: join(pod, 'cache') },
      );
      expect(noIdentityDir.code).toBe(2);
      expect(noIdentityDir.stdout).toBe('');
      expect(noIdentityDir.stderr).toContain(
        'ERR_TOKEN_REQUEST_USAGE: --bootstrap tenant-cert: no --identity-dir given, HOME is not set and the user has no home directory (at --identity-dir)',
      );
      expect(noIdentityDir.stderr).toContain('hint: give --identity-dir DIR');

      // --identity-dir given; the token's --cache-dir, but nothing that places the certificate's cache.
      const noCache = await asPodUser(
        [
          '--bootstrap',
          'tenant-cert',
          '--cluster-id',
          CONSUMER,
          '--key-file',
          keyFile,
          '--identity-dir',
          join(pod, 'identities'),
          '--cache-dir',
          join(pod, 'tokens'),
        ],
        {},
      );
      expect(noCache.code).toBe(2);
      expect(noCache.stdout).toBe('');
      expect(noCache.stderr).toContain(
        'ERR_TOKEN_REQUEST_USAGE: --bootstrap tenant-cert: no cache directory for the tenant-cert certificate: KUBECACHEDIR is not set and there is no home directory (at KUBECACHEDIR)',
      );
      expect(noCache.stderr).toContain('hint: set KUBECACHEDIR');
    },
  );
});
