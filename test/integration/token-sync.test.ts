/**
 * `clusterprofile token sync` as a real process: ClusterProfiles listed from the hub, the providers file's exec plugin
 * (a real child process) as the bootstrap identity, TokenRequest on the member, Secrets written on the hub in the
 * Secret Reader layout — then read back by the Secret Reader plugin, the whole push model — and in the
 * kubeconfig-secretreader layout (upstream's plugins read both in test/e2e/token-sync-upstream.test.ts).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { parse } from 'yaml';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { writeSplitKubeconfig } from '../helpers/kubeconfig-split.js';
import { runNode } from '../helpers/process.js';
import { createTestCa, type TestCa } from '../helpers/tls.js';

const ROOT = join(import.meta.dirname, '../..');
const PLUGIN = join(ROOT, 'test/fixtures/token-request/static-token-plugin.mjs');

function run(bin: string, args: string[], env: Record<string, string> = {}) {
  return runNode(join(ROOT, 'bin', bin), args, { env: { HOME: dir, ...env } });
}

let ca: TestCa;
let api: FakeKubeApi;
let dir: string;

function profile(name: string, provider: string, config: Record<string, unknown>) {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name, namespace: 'fleet' },
    spec: { clusterManager: { name: 'test' } },
    status: {
      accessProviders: [
        {
          name: provider,
          cluster: {
            server: api.url,
            'certificate-authority-data': ca.certBase64,
            extensions: [{ name: 'client.authentication.k8s.io/exec', extension: config }],
          },
        },
      ],
    },
  };
}

beforeEach(async () => {
  ca = await createTestCa();
  dir = await mkdtemp(join(tmpdir(), 'cpc-sync-'));
  api = await startFakeKubeApi({
    ca,
    minters: { 'fleet/workload-a': ['member-bootstrap'], 'fleet/workload-b': ['member-bootstrap'] },
    serviceAccounts: ['fleet/workload-a', 'fleet/workload-b'],
    secretUsers: ['hub-sync', 'hub-reader'],
  });
  api.options.profiles = [
    profile('spoke-b', 'bootstrap', { serviceAccount: 'workload-b' }),
    profile('spoke-a', 'bootstrap', { serviceAccount: 'workload-a', expirationSeconds: 1200 }),
  ];
  await writeFile(
    join(dir, 'providers.json'),
    JSON.stringify({
      providers: [
        {
          name: 'bootstrap',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [PLUGIN, 'member-bootstrap'],
            env: [{ name: 'PLUGIN_RUN_LOG', value: join(dir, 'runs.log') }],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ],
    }),
  );
  const kubeconfig = (token: string) =>
    JSON.stringify({
      'current-context': 'hub',
      clusters: [{ name: 'hub', cluster: { server: api.url, 'certificate-authority-data': ca.certBase64 } }],
      users: [{ name: 'u', user: { token } }],
      contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'u', namespace: 'fleet' } }],
    });
  await writeFile(join(dir, 'hub-sync.kubeconfig'), kubeconfig('hub-sync'));
  await writeFile(join(dir, 'hub-reader.kubeconfig'), kubeconfig('hub-reader'));
});

afterEach(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

const syncArgs = () => [
  'token',
  'sync',
  '--hub-kubeconfig',
  join(dir, 'hub-sync.kubeconfig'),
  '--clusterprofile-provider-file',
  join(dir, 'providers.json'),
  '--token-namespace',
  'fleet',
];

async function podsStatus(token: string): Promise<number> {
  const response = await request(`${api.url}/api/v1/namespaces/fleet/pods`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: new Agent({ connect: { ca: ca.cert } }),
  });
  await response.body.dump();
  return response.statusCode;
}

test('one pass fills a Secret per ClusterProfile; the Secret Reader hands the token out; a second pass leaves fresh tokens alone', async () => {
  const first = await run('clusterprofile.mjs', syncArgs());
  expect(first.stderr).toMatch(/spoke-a: token minted/);
  expect(first.stderr).toMatch(/spoke-b: token minted/);
  expect(first.code).toBe(0);
  expect(first.stdout).toBe('');
  expect(Object.keys(api.secrets).sort()).toEqual(['fleet/spoke-a', 'fleet/spoke-b']);
  const tokenA = api.secrets['fleet/spoke-a']!.token!;
  expect(api.minted.find((entry) => entry.token === tokenA)).toMatchObject({ serviceAccount: 'workload-a' });
  expect(await podsStatus(tokenA)).toBe(200);

  const second = await run('clusterprofile.mjs', syncArgs());
  expect(second.code).toBe(0);
  expect(second.stderr).toMatch(/spoke-a: still fresh/);
  expect(api.minted).toHaveLength(2);

  const reader = await run(
    'clusterprofile-token-request.mjs',
    [
      '--mode',
      'secret-reader',
      '--hub-kubeconfig',
      join(dir, 'hub-reader.kubeconfig'),
      '--cache-dir',
      join(dir, 'cache'),
    ],
    {
      KUBERNETES_EXEC_INFO: JSON.stringify({
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive: false, cluster: { server: api.url, config: { clusterName: 'spoke-a' } } },
      }),
    },
  );
  expect(reader.code).toBe(0);
  expect(JSON.parse(reader.stdout).status.token).toBe(tokenA);
});

test('without --hub-kubeconfig the hub comes from KUBECONFIG=a:b, merged as kubectl merges it (context and namespace from a, cluster and user from b)', async () => {
  const split = await writeSplitKubeconfig(join(dir, 'split'), {
    server: api.url,
    caBase64: ca.certBase64,
    token: 'hub-sync',
    namespace: 'fleet',
  });
  const result = await run(
    'clusterprofile.mjs',
    ['token', 'sync', '--clusterprofile-provider-file', join(dir, 'providers.json'), '--token-namespace', 'fleet'],
    { KUBECONFIG: split.KUBECONFIG },
  );
  expect(result.stderr).toMatch(/spoke-a: token minted/);
  expect(result.stderr).toMatch(/spoke-b: token minted/);
  expect(result.code).toBe(0);
  expect(Object.keys(api.secrets).sort()).toEqual(['fleet/spoke-a', 'fleet/spoke-b']);
  const hubCalls = api.server.requests.filter(
    (r) => r.url.startsWith('/apis/multicluster.x-k8s.io/') || r.url.includes('/secrets'),
  );
  expect(new Set(hubCalls.map((r) => r.bearer))).toEqual(new Set(['hub-sync']));
});

test('a cluster that fails is reported, the others are still synced, and the exit code is 1', async () => {
  api.options.profiles!.push(profile('spoke-c', 'unknown-provider', {}));
  const result = await run('clusterprofile.mjs', syncArgs());
  expect(result.code).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/spoke-c: failed: ERR_NO_MATCHING_PROVIDER/);
  expect(Object.keys(api.secrets).sort()).toEqual(['fleet/spoke-a', 'fleet/spoke-b']);
});

test('bad flags and an unreadable providers file are usage errors with nothing on stdout', async () => {
  const interval = await run('clusterprofile.mjs', [...syncArgs(), '--interval', 'soon']);
  expect(interval.code).not.toBe(0);
  expect(interval.stdout).toBe('');
  expect(interval.stderr).toContain('--interval');
  const missing = await run('clusterprofile.mjs', [
    'token',
    'sync',
    '--hub-kubeconfig',
    join(dir, 'hub-sync.kubeconfig'),
    '--clusterprofile-provider-file',
    join(dir, 'nope.json'),
  ]);
  expect(missing.code).toBe(1);
  expect(missing.stdout).toBe('');
  expect(missing.stderr).toContain('ERR_ACCESS_CONFIG_READ');
  expect(api.minted).toHaveLength(0);
});

test('--layout kubeconfig-secretreader: Secret <name>-kubeconfig, key value, a kubeconfig whose current user carries the token; fresh ones are left alone', async () => {
  const first = await run('clusterprofile.mjs', [...syncArgs(), '--layout', 'kubeconfig-secretreader']);
  expect(first.stderr).toMatch(/spoke-a: token minted/);
  expect(first.code).toBe(0);
  expect(first.stdout).toBe('');
  expect(Object.keys(api.secrets).sort()).toEqual(['fleet/spoke-a-kubeconfig', 'fleet/spoke-b-kubeconfig']);
  expect(Object.keys(api.secrets['fleet/spoke-a-kubeconfig']!)).toEqual(['value']);
  const kubeconfig = parse(api.secrets['fleet/spoke-a-kubeconfig']!['value']!) as {
    'current-context': string;
    contexts: { name: string; context: { cluster: string; user: string } }[];
    clusters: { name: string; cluster: Record<string, unknown> }[];
    users: { name: string; user: Record<string, unknown> }[];
  };
  expect(kubeconfig).toMatchObject({ apiVersion: 'v1', kind: 'Config', 'current-context': 'spoke-a' });
  expect(kubeconfig).not.toHaveProperty('extensions');
  const context = kubeconfig.contexts.find((entry) => entry.name === kubeconfig['current-context'])!.context;
  expect(kubeconfig.clusters.find((entry) => entry.name === context.cluster)!.cluster).toEqual({
    server: api.url,
    'certificate-authority-data': ca.certBase64,
  });
  const user = kubeconfig.users.find((entry) => entry.name === context.user)!.user;
  expect(Object.keys(user)).toEqual(['token']);
  expect(api.minted.find((entry) => entry.token === user['token'])).toMatchObject({ serviceAccount: 'workload-a' });
  expect(await podsStatus(String(user['token']))).toBe(200);

  const second = await run('clusterprofile.mjs', [...syncArgs(), '--layout', 'kubeconfig-secretreader']);
  expect(second.code).toBe(0);
  expect(second.stderr).toMatch(/spoke-a: still fresh/);
  expect(api.minted).toHaveLength(2);
});

test('an unknown --layout is a usage error (exit 2) naming the flag and the choices, before anything is minted', async () => {
  const result = await run('clusterprofile.mjs', [...syncArgs(), '--layout', 'kubeconfig']);
  expect(result.code).toBe(2);
  expect(result.stdout).toBe('');
  expect(result.stderr).toContain('layout');
  expect(result.stderr).toContain('kubeconfig-secretreader');
  expect(api.minted).toHaveLength(0);
});
