/**
 * The clusterprofile-token-request binary as a real child process against a local HTTPS API server that implements
 * TokenRequest and Secrets faithfully (test/helpers/kube-api.ts). Each minted token is proven by using it.
 */
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { writeSplitKubeconfig } from '../helpers/kubeconfig-split.js';
import { runNode } from '../helpers/process.js';
import { createTestCa, startHttpsServer, type TestCa } from '../helpers/tls.js';

const BIN = join(import.meta.dirname, '../../bin/clusterprofile-token-request.mjs');

function runPlugin(args: string[], execInfo: unknown, env: Record<string, string> = {}) {
  return runNode(BIN, args, {
    env: { ...(execInfo === undefined ? {} : { KUBERNETES_EXEC_INFO: JSON.stringify(execInfo) }), ...env },
  });
}

function kubeconfig(server: string, caBase64: string, user: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'c',
    clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': caBase64 } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'u', namespace: 'fleet' } }],
  });
}

let ca: TestCa;
let api: FakeKubeApi;
let dir: string;
let bootstrapKubeconfig: string;

function execInfo(config: Record<string, unknown>, apiVersion = 'client.authentication.k8s.io/v1') {
  return {
    apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, cluster: { server: api.url, 'certificate-authority-data': ca.certBase64, config } },
  };
}

const goodConfig = {
  namespace: 'fleet',
  serviceAccount: 'fleet-workload',
  audiences: ['https://member.example'],
  expirationSeconds: 3600,
};

async function useToken(token: string, namespace = 'fleet'): Promise<number> {
  const { request } = await import('undici');
  const { Agent } = await import('undici');
  const response = await request(`${api.url}/api/v1/namespaces/${namespace}/pods`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: new Agent({ connect: { ca: ca.cert } }),
  });
  await response.body.dump();
  return response.statusCode;
}

beforeAll(async () => {
  ca = await createTestCa();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-tr-'));
  api = await startFakeKubeApi({
    ca,
    minters: { 'fleet/fleet-workload': ['bootstrap-token'] },
    serviceAccounts: ['fleet/fleet-workload'],
    secretUsers: ['hub-reader'],
    secrets: { 'fleet/spoke-1': { token: 'pushed-token' }, 'fleet/spoke-2': { other: 'x' } },
  });
  bootstrapKubeconfig = join(dir, 'bootstrap.kubeconfig');
  await writeFile(bootstrapKubeconfig, kubeconfig(api.url, ca.certBase64, { token: 'bootstrap-token' }));
});

afterEach(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

afterAll(() => undefined);

const cacheArgs = () => ['--cache-dir', join(dir, 'cache')];

describe('token-request mode', () => {
  test('mints a bound token that the API server accepts, with an expiry 80% into its lifetime', async () => {
    const before = Date.now();
    const result = await runPlugin(
      ['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()],
      execInfo(goodConfig),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const credential = JSON.parse(result.stdout);
    expect(credential).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' });
    expect(api.minted).toHaveLength(1);
    expect(api.minted[0]).toMatchObject({
      namespace: 'fleet',
      serviceAccount: 'fleet-workload',
      audiences: ['https://member.example'],
    });
    expect(credential.status.token).toBe(api.minted[0]!.token);
    const renewIn = Date.parse(credential.status.expirationTimestamp) - before;
    expect(renewIn).toBeGreaterThan(0.8 * 3600_000 - 5_000);
    expect(renewIn).toBeLessThanOrEqual(0.8 * 3600_000 + 1_000);
    expect(await useToken(credential.status.token)).toBe(200);
    expect(await useToken(credential.status.token, 'other')).toBe(403);
  });

  test.each([
    ['--bootstrap kubeconfig', ['--bootstrap', 'kubeconfig']],
    ['no bootstrap flag (the default)', []],
  ])(
    '%s without --bootstrap-kubeconfig: the identity comes from KUBECONFIG=a:b, merged as kubectl merges it',
    async (_name, flags) => {
      const split = await writeSplitKubeconfig(join(dir, 'split'), {
        server: api.url,
        caBase64: ca.certBase64,
        token: 'bootstrap-token',
      });
      const result = await runPlugin([...flags, ...cacheArgs()], execInfo(goodConfig), {
        KUBECONFIG: split.KUBECONFIG,
      });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(api.minted).toHaveLength(1);
      expect(api.server.requests.map((r) => r.bearer)).toEqual(['bootstrap-token']);
      expect(await useToken(JSON.parse(result.stdout).status.token)).toBe(200);
    },
  );

  test('a ClusterProfile cannot redirect the bootstrap credential: another server, or a plain-http kubeconfig server, is refused before anything is sent', async () => {
    const collector = await startHttpsServer({ ca, handler: (_request, _req, res) => res.end('{}') });
    try {
      const info = execInfo(goodConfig);
      info.spec.cluster.server = `${collector.url}/`;
      const result = await runPlugin(['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()], info);
      expect(result.code).toBe(2); // a configuration to change, as the registry says
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain(
        `ERR_TOKEN_REQUEST_BOOTSTRAP_SERVER: the ClusterProfile names the server ${collector.url}/, but the bootstrap identity`,
      );
      expect(result.stderr).toContain(`belongs to ${api.url}`);
      expect(result.stderr).not.toContain('bootstrap-token');
      expect(collector.requests).toHaveLength(0);
      expect(api.server.requests).toHaveLength(0);
      await expect(
        readdir(join(dir, 'cache')).then((names) => names.filter((name) => name.endsWith('.json'))),
      ).resolves.toEqual([]);

      const plain = join(dir, 'plain.kubeconfig');
      await writeFile(
        plain,
        kubeconfig(api.url.replace('https:', 'http:'), ca.certBase64, { token: 'bootstrap-token' }),
      );
      const http = await runPlugin(['--bootstrap-kubeconfig', plain, ...cacheArgs()], execInfo(goodConfig));
      // The kubeconfig loader refuses a credential for a plain http:// server, for every caller (kubectl sends none).
      expect(http.code).toBe(1);
      expect(http.stdout).toBe('');
      expect(http.stderr).toContain('ERR_KUBECONFIG_INVALID');
      expect(http.stderr).toContain('is a plain http:// server');
      expect(http.stderr).not.toContain('bootstrap-token');
      expect(api.server.requests).toHaveLength(0);
    } finally {
      await collector.close();
    }
  });

  test('outside a pod with no kubeconfig anywhere, the error says what was tried and what to do', async () => {
    const home = join(dir, 'home');
    await mkdir(home);
    const result = await runPlugin(cacheArgs(), execInfo(goodConfig), { HOME: home });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      `ERR_KUBECONFIG_READ: cannot find the bootstrap kubeconfig: no --bootstrap-kubeconfig, KUBECONFIG is not set, ${join(home, '.kube', 'config')} does not exist, not in a pod (KUBERNETES_SERVICE_HOST/PORT are not set)`,
    );
    expect(result.stderr).toContain('hint: pass --bootstrap-kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config');
    expect(api.server.requests).toHaveLength(0);
  });

  test('a second run is served from the cache: no second TokenRequest; v1beta1 answered in v1beta1', async () => {
    const first = await runPlugin(
      ['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()],
      execInfo(goodConfig, 'client.authentication.k8s.io/v1beta1'),
    );
    const second = await runPlugin(
      ['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()],
      execInfo(goodConfig, 'client.authentication.k8s.io/v1beta1'),
    );
    expect(first.code).toBe(0);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout).apiVersion).toBe('client.authentication.k8s.io/v1beta1');
    expect(JSON.parse(second.stdout).status.token).toBe(JSON.parse(first.stdout).status.token);
    expect(api.minted).toHaveLength(1);
  });

  test('a different service account is a different cache entry', async () => {
    api.options.minters['fleet/other'] = ['bootstrap-token'];
    api.options.serviceAccounts.push('fleet/other');
    await runPlugin(['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()], execInfo(goodConfig));
    const other = await runPlugin(
      ['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()],
      execInfo({ ...goodConfig, serviceAccount: 'other' }),
    );
    expect(other.code).toBe(0);
    expect(api.minted.map((entry) => entry.serviceAccount)).toEqual(['fleet-workload', 'other']);
  });

  test('transient 500s are retried', async () => {
    api.options.failNext = { status: 500, count: 2 };
    const result = await runPlugin(
      ['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()],
      execInfo(goodConfig),
    );
    expect(result.code).toBe(0);
    expect(api.minted).toHaveLength(1);
  });

  test.each([
    [
      'a bootstrap identity without the permission',
      { token: 'someone-else' },
      goodConfig,
      'ERR_TOKEN_REQUEST_FORBIDDEN',
      '"create" on resource "serviceaccounts/token"',
    ],
    [
      'a missing service account',
      { token: 'bootstrap-token' },
      { ...goodConfig, serviceAccount: 'ghost' },
      'ERR_TOKEN_REQUEST_FORBIDDEN',
      'ghost',
    ],
    ['no credential at all', {}, goodConfig, 'ERR_TOKEN_REQUEST_BOOTSTRAP', 'no credential'],
  ])('%s: clear error, exit 1, empty stdout, nothing cached', async (_name, user, config, code, text) => {
    await writeFile(bootstrapKubeconfig, kubeconfig(api.url, ca.certBase64, user as Record<string, string>));
    const result = await runPlugin(['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()], execInfo(config));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(code);
    expect(result.stderr).toContain(text);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const entries = await readdir(join(dir, 'cache'), { recursive: true }).catch(() => []);
    expect(entries.filter((name) => String(name).endsWith('.json'))).toEqual([]);
  });

  test('404 names the missing service account', async () => {
    api.options.minters['fleet/ghost'] = ['bootstrap-token'];
    const result = await runPlugin(
      ['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()],
      execInfo({ ...goodConfig, serviceAccount: 'ghost' }),
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TOKEN_REQUEST_NOT_FOUND');
    expect(result.stderr).toContain('service account fleet/ghost not found');
  });

  test.each([
    [{ ...goodConfig, namespace: 'Not_A_Label' }, 'spec.cluster.config.namespace'],
    [{ ...goodConfig, expirationSeconds: 599 }, 'less than 10 minutes'],
    [{ ...goodConfig, expirationSeconds: 2 ** 33 }, 'larger than 2^32 seconds'],
  ])('bad settings %j are refused before any request', async (config, text) => {
    const result = await runPlugin(['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()], execInfo(config));
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TOKEN_REQUEST_SETTINGS');
    expect(result.stderr).toContain(text);
    expect(api.server.requests).toHaveLength(0);
  });

  test('without spec.cluster (provideClusterInfo off) it says what to change', async () => {
    const result = await runPlugin(['--bootstrap-kubeconfig', bootstrapKubeconfig, ...cacheArgs()], {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('provideClusterInfo');
  });

  test('a malformed TokenRequest answer is refused and nothing is cached', async () => {
    const liar = await startHttpsServer({
      ca,
      handler: (_request, _req, res) => {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ kind: 'TokenRequest', apiVersion: 'authentication.k8s.io/v1', status: { token: 'x' } }),
        );
      },
    });
    try {
      const info = execInfo(goodConfig);
      info.spec.cluster.server = liar.url;
      // The bootstrap identity is the liar's own (a credential goes only to the server its kubeconfig names).
      const liarKubeconfig = join(dir, 'liar.kubeconfig');
      await writeFile(liarKubeconfig, kubeconfig(liar.url, ca.certBase64, { token: 'bootstrap-token' }));
      const result = await runPlugin(['--bootstrap-kubeconfig', liarKubeconfig, ...cacheArgs()], info);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('ERR_TOKEN_REQUEST_RESPONSE_INVALID');
      const again = await runPlugin(['--bootstrap-kubeconfig', liarKubeconfig, ...cacheArgs()], info);
      expect(again.code).toBe(1);
      expect(liar.requests.length).toBe(2);
    } finally {
      await liar.close();
    }
  });

  test('a server certificate from another CA is refused (TLS verification is on)', async () => {
    const otherCa = await createTestCa('other');
    const info = execInfo(goodConfig);
    info.spec.cluster['certificate-authority-data'] = otherCa.certBase64;
    // The bootstrap identity trusts what its kubeconfig trusts: there, the other CA.
    const otherTrust = join(dir, 'other-ca.kubeconfig');
    await writeFile(otherTrust, kubeconfig(api.url, otherCa.certBase64, { token: 'bootstrap-token' }));
    const result = await runPlugin(['--bootstrap-kubeconfig', otherTrust, ...cacheArgs()], info);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_KUBE_UNREACHABLE');
    expect(api.minted).toHaveLength(0);
  });
});

describe('secret-reader mode', () => {
  let hubKubeconfig: string;
  beforeEach(async () => {
    hubKubeconfig = join(dir, 'hub.kubeconfig');
    await writeFile(hubKubeconfig, kubeconfig(api.url, ca.certBase64, { token: 'hub-reader' }));
  });

  const readerInfo = (config: unknown) => ({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: { interactive: false, cluster: { server: 'https://member.invalid', config } },
  });

  test('returns the token of Secret <namespace>/<clusterName>, without an expiry', async () => {
    const result = await runPlugin(
      ['--mode', 'secret-reader', '--hub-kubeconfig', hubKubeconfig, ...cacheArgs()],
      readerInfo({ clusterName: 'spoke-1' }),
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'pushed-token' },
    });
  });

  test('the namespace comes from the hub kubeconfig context, KUBECONFIG is honoured', async () => {
    const result = await runPlugin(
      ['--mode', 'secret-reader', ...cacheArgs()],
      readerInfo({ clusterName: 'spoke-1' }),
      { KUBECONFIG: hubKubeconfig },
    );
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).status.token).toBe('pushed-token');
  });

  test("without --hub-kubeconfig the hub comes from KUBECONFIG=a:b, merged as kubectl merges it (namespace from a's context)", async () => {
    const split = await writeSplitKubeconfig(join(dir, 'split'), {
      server: api.url,
      caBase64: ca.certBase64,
      token: 'hub-reader',
      namespace: 'fleet',
    });
    const result = await runPlugin(
      ['--mode', 'secret-reader', ...cacheArgs()],
      readerInfo({ clusterName: 'spoke-1' }),
      { KUBECONFIG: split.KUBECONFIG },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).status.token).toBe('pushed-token');
    expect(api.server.requests.map((r) => `${r.bearer} ${r.method} ${r.url}`)).toEqual([
      'hub-reader GET /api/v1/namespaces/fleet/secrets/spoke-1',
    ]);
  });

  test.each([
    [{ clusterName: 'spoke-9' }, 'failed to get secret fleet/spoke-9: secrets "spoke-9" not found'],
    [{ clusterName: 'spoke-2' }, 'secret fleet/spoke-2 missing "token" key'],
    [{}, 'missing clusterName in ExecCredential.Spec.Cluster.Config'],
    [undefined, 'missing ExecCredential.Spec.Cluster.Config'],
  ])('%j → upstream error text, empty stdout', async (config, text) => {
    const result = await runPlugin(
      ['--mode', 'secret-reader', '--hub-kubeconfig', hubKubeconfig, ...cacheArgs()],
      readerInfo(config),
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(text);
  });
});
