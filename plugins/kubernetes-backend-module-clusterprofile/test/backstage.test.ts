/**
 * The module in a real Backstage backend (`startTestBackend` of @backstage/backend-test-utils with the real
 * @backstage/plugin-kubernetes-backend), loaded as a backend loads it (`import()`, and `require()` as a backend
 * compiled to CommonJS does), against the real control plane of the e2e layer. The hub is that API server, holding
 * the inventory; the "member clusters" are that same API server, each profile bound to its own identity: two
 * token-request ServiceAccounts, a tenant-cert identity from a real issuer (a CSR signed by kube-controller-manager)
 * and a ServiceAccount token handed out by an exec'd plugin that is not ours and says its credential lives 5 s. Only
 * those identities may read the entity's namespace, so an object Backstage returns for a member was read as a member.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { mockCredentials, mockServices, startTestBackend } from '@backstage/backend-test-utils';
import { catalogServiceMock } from '@backstage/plugin-catalog-node/testUtils';
import type { JsonObject } from '@backstage/types';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isCredentialsError } from '../../../src/library/index.js';
import {
  adminKubectl,
  startE2eIssuer,
  tempDir,
  type E2eIssuer,
} from '../../../test/e2e/fixtures/tenant-cert-issuer.js';
import { applyAsAdmin, clientCertKubeconfig, tempFile } from '../../../test/helpers/controlplane-e2e.js';
import { fleetRbac } from '../../../test/helpers/fleet-rbac.js';
import { controlPlaneStatus, createProfile, patchProfileStatus, waitFor } from '../../../test/helpers/inventory-e2e.js';

const MODULE = '@clusterprofile-credentials/backstage-plugin-kubernetes-backend-module-clusterprofile';
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const crdFile = path.join(repo, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml');
const NS = 'backstage-e2e';
const SA_NS = 'backstage-e2e-members';
const APPS = 'backstage-e2e-apps';
const HUB_USER = 'e2e-backstage-hub';
const MINTER = 'e2e-backstage-minter';
const CONSUMER = 'backstage-hub-tc';
const TC_GROUP = 'backstage-tenants';
const LABEL: Record<string, string> = { 'backstage.example/show': 'yes' };

/** The entity whose workloads the Kubernetes tab shows: its objects are labelled with its id, in namespace APPS. */
const SHOP = {
  apiVersion: 'backstage.io/v1alpha1',
  kind: 'Component',
  metadata: {
    name: 'shop',
    namespace: 'default',
    annotations: { 'backstage.io/kubernetes-id': 'shop', 'backstage.io/kubernetes-namespace': APPS },
  },
  spec: { type: 'service', lifecycle: 'production', owner: 'team-a' },
};

let hubKubeconfig = '';
let providersFile = '';
let rotatingCount = '';
let rotatingToken = '';
let issuer: E2eIssuer;
/** The credential cache of the providers running in the backend's process (KUBECACHEDIR; restored after). */
let cacheDir = '';
const savedCacheDir = process.env['KUBECACHEDIR'];

const admin = adminKubectl;
const tokenRequest = (sa: string) =>
  controlPlaneStatus('token-request', { namespace: SA_NS, serviceAccount: sa, expirationSeconds: 600 });

/** The module's configuration with `overrides` (the default: the inventory, the providers file, the label). */
function moduleConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    hub: { kubeconfig: hubKubeconfig },
    namespace: NS,
    providersFile,
    labelSelector: 'backstage.example/show=yes',
    requireHealthy: true,
    refreshMarginSeconds: 2,
    ...overrides,
  };
}

/** A Backstage backend with the Kubernetes plugin and this module, as an app's packages/backend adds them. */
function backendWith(clusterProfiles: Record<string, unknown>, logLevel: 'debug' | 'none' = 'debug') {
  return startTestBackend({
    features: [
      import('@backstage/plugin-kubernetes-backend'),
      import(MODULE),
      // The catalog holding the entity whose workloads are asked for (the router looks it up before fanning out).
      catalogServiceMock.factory({ entities: [SHOP] }),
      // Everything logged reaches the console, where the test reads it.
      mockServices.rootLogger.factory({ level: logLevel }),
      mockServices.rootConfig.factory({
        data: {
          kubernetes: {
            serviceLocatorMethod: { type: 'multiTenant' },
            clusterLocatorMethods: [],
            objectTypes: ['configmaps', 'services'],
            clusterProfiles: clusterProfiles as JsonObject,
          },
        },
      }),
    ],
  });
}

/** The coded error somewhere in `error`'s cause chain (Backstage wraps a module's failed start). */
function codedCause(error: unknown): { code: string; path?: string; message: string } | undefined {
  const result = (error as { result?: { plugins: { modules: { failure?: { error: unknown } }[] }[] } }).result;
  for (const plugin of result?.plugins ?? []) {
    for (const mod of plugin.modules) {
      if (isCredentialsError(mod.failure?.error)) return mod.failure.error;
    }
  }
  return undefined;
}

beforeAll(async () => {
  cacheDir = await tempDir('backstage-cache');
  process.env['KUBECACHEDIR'] = cacheDir;
  await admin(['apply', '-f', crdFile]);
  await admin(['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io']);
  for (const ns of [NS, SA_NS, APPS]) await admin(['create', 'namespace', ns]);
  for (const sa of ['bs-member-1', 'bs-member-2', 'bs-member-3', 'bs-rotating'])
    await admin(['create', 'serviceaccount', sa, '-n', SA_NS]);
  await applyAsAdmin(fleetRbac({ inventory: NS, accounts: SA_NS, hubUser: HUB_USER, minter: MINTER }));
  // The entity's namespace: only the members' identities may read it (not the hub identity, not anonymous).
  const subject = (name: string) => ({ kind: 'ServiceAccount', name, namespace: SA_NS });
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'shop-reader', namespace: APPS },
        rules: [{ apiGroups: [''], resources: ['configmaps', 'services'], verbs: ['get', 'list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'shop-reader', namespace: APPS },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'shop-reader' },
        subjects: [
          ...['bs-member-1', 'bs-member-2', 'bs-member-3', 'bs-rotating'].map(subject),
          { apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: TC_GROUP },
        ],
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'shop-config', namespace: APPS, labels: { 'backstage.io/kubernetes-id': 'shop' } },
        data: { greeting: 'hello' },
      },
    ],
  });
  hubKubeconfig = await clientCertKubeconfig(HUB_USER);
  const minterKubeconfig = await clientCertKubeconfig(MINTER);
  issuer = await startE2eIssuer({
    suffix: 'backstage',
    providerClusterID: 'backstage-member-tc',
    consumerClusterID: CONSUMER,
    groups: [TC_GROUP],
  });
  // A plugin that is not ours: a ServiceAccount token it says expires in 5 s; each run leaves a mark.
  rotatingToken = (await admin(['create', 'token', 'bs-rotating', '-n', SA_NS, '--duration', '1h'])).trim();
  const tokenFile = await tempFile('rotating.token', rotatingToken);
  rotatingCount = await tempFile('rotating.count', '');
  const plugin = await tempFile(
    'rotating-plugin.cjs',
    [
      "const fs = require('node:fs');",
      'fs.appendFileSync(process.env.RUNS, String(Date.now()) + "\\n");',
      'const expirationTimestamp = new Date(Date.now() + 5000).toISOString();',
      'const token = fs.readFileSync(process.env.TOKEN_FILE, "utf8");',
      "process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token, expirationTimestamp } }));",
    ].join('\n'),
  );
  const exec = (command: string, args: string[], env: { name: string; value: string }[] = []) => ({
    apiVersion: 'client.authentication.k8s.io/v1',
    command,
    args,
    env,
    provideClusterInfo: true,
    interactiveMode: 'Never',
  });
  providersFile = await tempFile(
    'providers.json',
    JSON.stringify({
      providers: [
        {
          name: 'token-request',
          execConfig: exec('clusterprofile-token-request', ['--bootstrap-kubeconfig', minterKubeconfig]),
        },
        {
          name: 'tenant-cert',
          execConfig: exec('clusterprofile-tenant-cert', ['--cluster-id', CONSUMER, '--key-file', issuer.keyFile]),
        },
        {
          name: 'rotating',
          execConfig: exec(
            process.execPath,
            [plugin],
            [
              { name: 'RUNS', value: rotatingCount },
              { name: 'TOKEN_FILE', value: tokenFile },
            ],
          ),
        },
      ],
    }),
  );
  await createProfile(NS, 'bs-member-1', await tokenRequest('bs-member-1'), LABEL);
  await createProfile(NS, 'bs-member-2', await tokenRequest('bs-member-2'), LABEL);
  await createProfile(NS, 'bs-tc', await controlPlaneStatus('tenant-cert', issuer.config), LABEL);
  await createProfile(NS, 'bs-rotating', await controlPlaneStatus('rotating'), LABEL);
  // No such ServiceAccount: its TokenRequest fails, for this member only.
  await createProfile(NS, 'bs-no-sa', await tokenRequest('nobody'), LABEL);
  // A provider the providers file does not have: the profile does not resolve.
  await createProfile(NS, 'bs-unknown', await controlPlaneStatus('not-in-the-providers-file'), LABEL);
  // Not selected by the label selector.
  await createProfile(NS, 'bs-unlabeled', await tokenRequest('bs-member-1'));
}, 180_000);

afterAll(async () => {
  if (savedCacheDir === undefined) delete process.env['KUBECACHEDIR'];
  else process.env['KUBECACHEDIR'] = savedCacheDir;
  await issuer?.issuer.stop();
  // Other files list ClusterProfiles across all namespaces (the harness runs no namespace controller to delete them).
  await admin(['delete', 'clusterprofiles', '--all', '-n', NS, '--wait=true']).catch(() => undefined);
});

describe('the module in a Backstage backend, on the real control plane', () => {
  let backend: Awaited<ReturnType<typeof startTestBackend>>;
  let base = '';

  const auth = { authorization: mockCredentials.user.header() };

  async function clusters(): Promise<{ text: string; names: string[]; items: Record<string, unknown>[] }> {
    const response = await fetch(`${base}/api/kubernetes/clusters`, { headers: auth });
    expect(response.status).toBe(200);
    const text = await response.text();
    const items = (JSON.parse(text) as { items: Record<string, unknown>[] }).items;
    return { text, items, names: items.map((item) => String(item['name'])).sort() };
  }

  /** SelfSubjectReview through Backstage's proxy to cluster `name`: the identity Backstage reaches it as. */
  async function whoamiThroughBackstage(
    name: string,
  ): Promise<{ status: number; username?: string; groups?: string[] }> {
    const response = await fetch(`${base}/api/kubernetes/proxy/apis/authentication.k8s.io/v1/selfsubjectreviews`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'backstage-kubernetes-cluster': name },
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
    });
    const body = (await response.json().catch(() => ({}))) as {
      status?: { userInfo?: { username?: string; groups?: string[] } };
    };
    return { status: response.status, ...body.status?.userInfo };
  }

  /** What the backend logged (every level), one line per call. */
  const logs: string[] = [];

  beforeAll(() => {
    for (const level of ['error', 'warn', 'info', 'debug'] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logs.push(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg ?? null))).join(' '));
      });
    }
  });

  afterAll(async () => {
    await backend?.stop();
    vi.restoreAllMocks();
  });

  it('loads with import() as a backend adds it, and with require() as a backend compiled to CommonJS does', async () => {
    // A real Node.js outside the test runner: the package is ESM only; Node's require(esm) gives the same module.
    const script = [
      `const viaRequire = require(${JSON.stringify(MODULE)});`,
      `import(${JSON.stringify(MODULE)}).then((viaImport) => {`,
      '  console.log(JSON.stringify({ same: viaRequire.default === viaImport.default, type: viaImport.default.$$type }));',
      '});',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=commonjs', '-e', script], {
      cwd: repo,
    });
    expect(JSON.parse(stdout)).toEqual({ same: true, type: '@backstage/BackendFeature' });

    backend = await backendWith(moduleConfig());
    const address = backend.server.address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
  });

  it('GET /clusters lists every selected member whose profile resolves, with no credential in the answer', async () => {
    const { names, items, text } = await clusters();
    expect(names).toEqual(['bs-member-1', 'bs-member-2', 'bs-no-sa', 'bs-rotating', 'bs-tc']);
    for (const item of items) expect(item).toMatchObject({ authProvider: 'clusterprofile' });
    expect(text).not.toContain(rotatingToken);
    expect(text).not.toMatch(/BEGIN|eyJ|token|caData/i);
  });

  it('the workloads of an entity come from every member, read as that member; the failing member shows its own error', async () => {
    const response = await fetch(`${base}/api/kubernetes/services/shop`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ entity: SHOP }),
    });
    expect(response.status).toBe(200);
    const { items } = (await response.json()) as {
      items: {
        cluster: { name: string };
        errors: { errorType: string; statusCode?: number }[];
        resources: { type: string; resources: { metadata: { name: string } }[] }[];
      }[];
    };
    const byCluster = Object.fromEntries(items.map((item) => [item.cluster.name, item]));
    expect(Object.keys(byCluster).sort()).toEqual(['bs-member-1', 'bs-member-2', 'bs-no-sa', 'bs-rotating', 'bs-tc']);
    for (const name of ['bs-member-1', 'bs-member-2', 'bs-rotating', 'bs-tc']) {
      expect(byCluster[name]!.errors, name).toEqual([]);
      const configmaps = byCluster[name]!.resources.find((r) => r.type === 'configmaps')!.resources;
      expect(configmaps.map((c) => c.metadata.name)).toEqual(['shop-config']);
    }
    expect(byCluster['bs-no-sa']!.errors).toContainEqual(
      expect.objectContaining({ errorType: 'UNAUTHORIZED_ERROR', statusCode: 401 }),
    );

    // Each member is reached as its own identity.
    expect(await whoamiThroughBackstage('bs-member-1')).toMatchObject({
      status: 201,
      username: `system:serviceaccount:${SA_NS}:bs-member-1`,
    });
    expect(await whoamiThroughBackstage('bs-member-2')).toMatchObject({
      status: 201,
      username: `system:serviceaccount:${SA_NS}:bs-member-2`,
    });
    const tc = await whoamiThroughBackstage('bs-tc');
    expect(tc).toMatchObject({ status: 201, username: CONSUMER });
    expect(tc.groups).toContain(TC_GROUP);
    expect(await whoamiThroughBackstage('bs-rotating')).toMatchObject({
      status: 201,
      username: `system:serviceaccount:${SA_NS}:bs-rotating`,
    });
  });

  it('a profile added, changed or deleted on the hub shows up without a restart', async () => {
    await createProfile(NS, 'bs-member-3', await tokenRequest('bs-member-3'), LABEL);
    await waitFor('bs-member-3 listed', async () => (await clusters()).names.includes('bs-member-3'));
    expect(await whoamiThroughBackstage('bs-member-3')).toMatchObject({
      username: `system:serviceaccount:${SA_NS}:bs-member-3`,
    });

    // bs-member-2's profile now binds it to another ServiceAccount: Backstage reaches it as that one.
    await patchProfileStatus(NS, 'bs-member-2', await tokenRequest('bs-member-3'));
    await waitFor(
      'bs-member-2 rebound',
      async () =>
        (await whoamiThroughBackstage('bs-member-2')).username === `system:serviceaccount:${SA_NS}:bs-member-3`,
    );

    // With requireHealthy, a member whose ControlPlaneHealthy turns False leaves the list, and comes back with True.
    const healthy = await tokenRequest('bs-member-3');
    const conditions = healthy['conditions'] as Record<string, unknown>[];
    await patchProfileStatus(NS, 'bs-member-3', { ...healthy, conditions: [{ ...conditions[0], status: 'False' }] });
    await waitFor(
      'bs-member-3 unlisted while unhealthy',
      async () => !(await clusters()).names.includes('bs-member-3'),
    );
    await patchProfileStatus(NS, 'bs-member-3', healthy);
    await waitFor('bs-member-3 listed again', async () => (await clusters()).names.includes('bs-member-3'));

    // A label no longer matching the selector takes a member away, as a deletion does.
    await admin(['label', 'clusterprofile', 'bs-member-3', '-n', NS, 'backstage.example/show-']);
    await waitFor('bs-member-3 unlisted', async () => !(await clusters()).names.includes('bs-member-3'));
    await admin(['delete', 'clusterprofile', 'bs-member-1', '-n', NS]);
    await waitFor('bs-member-1 unlisted', async () => !(await clusters()).names.includes('bs-member-1'));
    expect((await clusters()).names).toEqual(['bs-member-2', 'bs-no-sa', 'bs-rotating', 'bs-tc']);
  });

  it('a credential that expires during the test is renewed ahead of time: no request fails', async () => {
    const runs = async () => (await readFile(rotatingCount, 'utf8')).split('\n').filter(Boolean).map(Number);
    const before = await runs();
    const firstExpiry = before.at(-1)! + 5000;
    const statuses: number[] = [];
    const until = Date.now() + 9000;
    while (Date.now() < until) {
      const answer = await whoamiThroughBackstage('bs-rotating');
      statuses.push(answer.status);
      expect(answer.username).toBe(`system:serviceaccount:${SA_NS}:bs-rotating`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    expect(Date.now()).toBeGreaterThan(firstExpiry);
    expect(statuses.every((status) => status === 201)).toBe(true);
    // Each 5 s credential was replaced before it expired: at least two more runs in 9 s.
    expect((await runs()).length - before.length).toBeGreaterThanOrEqual(2);
  });

  it("the log names each profile that is not listed or has no credential, with its code; neither the log nor the disk holds a credential beyond the providers' own cache", async () => {
    const text = logs.join('\n');
    expect(text).toContain(`ClusterProfile ${NS}/bs-unknown is not listed: ERR_NO_MATCHING_PROVIDER`);
    expect(text).toMatch(new RegExp(`ClusterProfile ${NS}/bs-no-sa: no credential: ERR_TOKEN_REQUEST_`));
    expect(text).toMatch(new RegExp(`ClusterProfile ${NS}/bs-no-sa: no credential for Backstage: ERR_TOKEN_REQUEST_`));
    // Logged once, not once per request.
    expect(text.split(`${NS}/bs-no-sa: no credential for Backstage`)).toHaveLength(2);
    expect(text).not.toContain(rotatingToken);
    expect(text).not.toMatch(/eyJ[\w-]+\.eyJ|BEGIN [A-Z ]*PRIVATE KEY|BEGIN CERTIFICATE/);

    // On disk: only the in-process providers' cache entries (as their binaries keep them), 0600 in 0700 directories.
    const providers = (await readdir(path.join(cacheDir, 'clusterprofile'))).sort();
    expect(providers).toEqual(['tenant-cert', 'token-request']);
    for (const provider of providers) {
      const dir = path.join(cacheDir, 'clusterprofile', provider);
      expect((await stat(dir)).mode & 0o777).toBe(0o700);
      for (const entry of await readdir(dir, { recursive: true })) {
        const info = await stat(path.join(dir, entry));
        if (info.isFile()) expect(info.mode & 0o777, entry).toBe(0o600);
      }
    }
  });
});

describe('configuration the module refuses: the backend does not start, with a coded error naming the key', () => {
  const cases: [string, () => Promise<Record<string, unknown>>, string, string][] = [
    [
      'a key of the wrong type',
      async () => moduleConfig({ namespace: 42 }),
      'ERR_BACKSTAGE_CONFIG',
      'kubernetes.clusterProfiles.namespace',
    ],
    [
      'no hub',
      async () => moduleConfig({ hub: { kubeconfig: path.join(repo, 'no-such.kubeconfig') } }),
      'ERR_KUBECONFIG_READ',
      'kubernetes.clusterProfiles.hub.kubeconfig',
    ],
    [
      'a namespace the hub refuses',
      async () => moduleConfig({ namespace: 'default' }),
      'ERR_FLEET_HUB_FORBIDDEN',
      'kubernetes.clusterProfiles.namespace',
    ],
    [
      'a providers file that does not parse',
      async () => moduleConfig({ providersFile: await tempFile('bad-providers.json', '{"providers": [') }),
      'ERR_ACCESS_CONFIG_PARSE',
      'kubernetes.clusterProfiles.providersFile',
    ],
  ];
  for (const [what, config, code, key] of cases) {
    it(what, async () => {
      const error = await backendWith(await config(), 'none').then(
        async (started) => {
          await started.stop();
          return undefined;
        },
        (e: unknown) => e,
      );
      const coded = codedCause(error);
      expect(coded, String(error)).toMatchObject({ code, path: key });
      expect(coded!.message).toContain(key);
    });
  }
});
