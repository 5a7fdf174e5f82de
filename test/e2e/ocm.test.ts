/**
 * Open Cluster Management writes the ClusterProfiles, our fleet and plugins reach the members — on the real control
 * plane, with OCM's own controllers (test/e2e/fixtures/ocm-hub.ts: OCM v1.2.1's registration hub, cluster-proxy
 * v0.10.0's addon-manager, managed-serviceaccount v0.10.0's manager and agents, all built unchanged):
 *
 * - OCM writes one profile per ManagedCluster of the set bound to the consumer namespace; the shape matches
 *   examples/producers/open-cluster-management/clusterprofile.yaml;
 * - managed-serviceaccount's agent mints each ManagedServiceAccount's token on the managed cluster (this control
 *   plane) and its ClusterProfile credential syncer copies it into Secret `<cluster>-<msa>` next to the profiles;
 * - (a) OCM's own cp-creds plugin, run by buildConfigFromClusterProfile and by ClusterProfileFleet from a providers
 *   file, and (b) our `clusterprofile-token-request --mode secret-reader --managed-serviceaccount`, without cp-creds,
 *   each reach every member as that member's service account.
 *
 * The server mapping: cluster-proxy writes `https://cluster-proxy-addon-user.<ns>:9092/<cluster>`, a Service name no
 * test machine resolves. After its addon-manager wrote every profile it is stopped, and the test replaces that host
 * and port (only those) in each profile's status with `127.0.0.1:<port>` of a stand-in user server
 * (fixtures/cluster-proxy-user-server.ts) serving cluster-proxy's own user-server certificate (127.0.0.1 is one of its
 * SANs) and forwarding `/<cluster>/…` to this control plane. The CA data, the extension and the `/<cluster>` path are
 * cluster-proxy's; nothing in the library knows about cluster-proxy.
 *
 * Bad input, through the fleet: a member whose Secret is missing, empty or holds no token, a profile whose provider
 * the providers file lacks, and a Secret namespace the reader may not read: each a coded error on that member, the
 * other members ready.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AuthenticationV1Api } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildConfigFromClusterProfile,
  ClusterProfileFleet,
  type AccessConfig,
  type ClusterProfile,
  type ClusterProfileKubeConfig,
  type FleetClusterStatus,
} from '../../src/library/index.js';
import { applyAsAdmin, clientCertKubeconfig, e2eContext } from '../helpers/controlplane-e2e.js';
import { freePort } from '../helpers/controlplane.js';
import { startUserServerStandIn, type UserServerStandIn } from './fixtures/cluster-proxy-user-server.js';
import { installOcmCrds, restoreOurCrd, startOcmProcess, waitFor, type OcmProcess } from './fixtures/ocm-hub.js';
import { adminKubectl, REPO } from './fixtures/tenant-cert-issuer.js';

const RECIPE = path.join(REPO, 'examples/producers/open-cluster-management');
const CONSUMER = 'kueue-system';
const ADDON_NS = 'open-cluster-management-addon';
const SET = 'app-clusters';
const MSA = 'kueue-admin';
const MEMBERS = ['cluster1', 'cluster2'];
/** ManagedClusters whose credential is broken on purpose: no ManagedServiceAccount, an empty token, not a token. */
const BAD = { missing: 'cluster-nosecret', empty: 'cluster-empty', garbage: 'cluster-garbage' };
const ALL = [...MEMBERS, ...Object.values(BAD)];
const READER = 'e2e-ocm-reader';
/** The namespace managed-serviceaccount's agent of `cluster` creates its service accounts in, on the managed cluster. */
const agentNamespace = (cluster: string) => `ocm-agent-${cluster}`;

const processes: OcmProcess[] = [];
let userServer: UserServerStandIn | undefined;
let readerKubeconfig = '';
let cpCredsConfig: AccessConfig;
let secretReaderConfig: AccessConfig;
let written: ClusterProfile | undefined;

async function profiles(): Promise<ClusterProfile[]> {
  const list = JSON.parse(await adminKubectl(['get', 'clusterprofiles', '-n', CONSUMER, '-o', 'json'])) as {
    items: ClusterProfile[];
  };
  return list.items;
}

async function whoami(config: ClusterProfileKubeConfig | undefined): Promise<string | undefined> {
  const review = await config!.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status?.userInfo?.username;
}

/** The recipe's providers file, with the command where this machine has it and the hub the plugin reads. */
async function providersFrom(file: string, command: string, env: Record<string, string>): Promise<AccessConfig> {
  const config = JSON.parse(await readFile(path.join(RECIPE, file), 'utf8')) as AccessConfig;
  for (const provider of config.providers ?? []) {
    Object.assign(provider.execConfig!, {
      command,
      env: Object.entries(env).map(([name, value]) => ({ name, value })),
    });
  }
  return config;
}

function rows(fleet: ClusterProfileFleet): Record<string, FleetClusterStatus> {
  return Object.fromEntries(fleet.status().clusters.map((row) => [row.name, row]));
}

/** A fleet on the consumer namespace as the consumer's hub identity, once it has settled. */
async function settledFleet(accessConfig: AccessConfig): Promise<ClusterProfileFleet> {
  const fleet = new ClusterProfileFleet({
    namespace: CONSUMER,
    accessConfig,
    hub: { kubeconfig: readerKubeconfig },
    env: { PATH: process.env['PATH'] ?? '' },
  });
  await fleet.start();
  await fleet.settled();
  return fleet;
}

/** Every good member is ready through `mode` and is its own managed service account on the member cluster. */
async function expectMembersReached(fleet: ClusterProfileFleet, mode: string): Promise<void> {
  const status = rows(fleet);
  for (const cluster of MEMBERS) {
    expect(status[cluster], JSON.stringify(status[cluster])).toMatchObject({
      state: 'ready',
      provider: 'open-cluster-management',
      mode,
    });
    // Neither plugin prints an expiry: the fleet holds the token until a request is refused.
    expect(status[cluster]?.credentialExpiresAt).toBeUndefined();
    expect(await whoami(fleet.get(cluster)?.client)).toBe(`system:serviceaccount:${agentNamespace(cluster)}:${MSA}`);
  }
}

beforeAll(async () => {
  const { controlPlane, binaries } = e2eContext();
  await installOcmCrds();
  for (const ns of [CONSUMER, ADDON_NS, ...ALL, ...ALL.map(agentNamespace)]) {
    await adminKubectl(['create', 'namespace', ns]);
  }

  // The hub: a ManagedClusterSet, its ManagedClusters (as their registration agents would have made them: accepted,
  // joined, available) and a binding to the consumer namespace.
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'cluster.open-cluster-management.io/v1beta2', kind: 'ManagedClusterSet', metadata: { name: SET } },
      ...ALL.map((name) => ({
        apiVersion: 'cluster.open-cluster-management.io/v1',
        kind: 'ManagedCluster',
        metadata: { name, labels: { 'cluster.open-cluster-management.io/clusterset': SET } },
        spec: { hubAcceptsClient: true, leaseDurationSeconds: 60 },
      })),
      {
        apiVersion: 'cluster.open-cluster-management.io/v1beta2',
        kind: 'ManagedClusterSetBinding',
        metadata: { name: SET, namespace: CONSUMER },
        spec: { clusterSet: SET },
      },
      // cluster-proxy's configuration, as its chart installs it, with the user server on.
      {
        apiVersion: 'proxy.open-cluster-management.io/v1alpha1',
        kind: 'ManagedProxyConfiguration',
        metadata: { name: 'cluster-proxy' },
        spec: {
          authentication: { dump: { secrets: {} }, signer: { type: 'SelfSigned' } },
          proxyServer: {
            image: 'cluster-proxy:e2e',
            namespace: ADDON_NS,
            entrypoint: { type: 'PortForward', port: 8091 },
          },
          proxyAgent: { image: 'cluster-proxy:e2e' },
          userServer: {},
        },
      },
    ],
  });
  // The conditions OCM's registration agent reports (pkg/registration/spoke/managedcluster: joining_reconcile.go,
  // resource_reconcile.go); the hub's lease controller keeps them for 5 lease durations without the agent's lease.
  const now = new Date().toISOString();
  const condition = (type: string, reason: string, message: string) => ({
    type,
    status: 'True',
    reason,
    message,
    lastTransitionTime: now,
  });
  for (const name of ALL) {
    await adminKubectl([
      'patch',
      'managedcluster',
      name,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          conditions: [
            condition('HubAcceptedManagedCluster', 'HubClusterAdminAccepted', 'Accepted by hub cluster admin'),
            condition('ManagedClusterJoined', 'ManagedClusterJoined', 'Managed cluster joined'),
            condition('ManagedClusterConditionAvailable', 'ManagedClusterAvailable', 'Managed cluster is available'),
          ],
        },
      }),
    ]);
  }

  processes.push(
    startOcmProcess('registration', binaries.ocmRegistration, [
      'controller',
      `--kubeconfig=${controlPlane.adminKubeconfig}`,
      '--disable-leader-election',
      `--listen=127.0.0.1:${await freePort()}`,
      `--namespace=${ADDON_NS}`,
      '--feature-gates=ClusterProfile=true',
    ]),
    startOcmProcess(
      'cluster-proxy',
      binaries.clusterProxyAddonManager,
      [
        '--metrics-bind-address=0',
        '--health-probe-bind-address=0',
        `--signer-secret-namespace=${ADDON_NS}`,
        '--feature-gates=ClusterProfileAccessProvider=true',
      ],
      { POD_NAMESPACE: ADDON_NS },
    ),
    startOcmProcess('msa-manager', binaries.managedServiceAccount, [
      'manager',
      '--deploy-mode=AddOnTemplate',
      '--feature-gates=ClusterProfileCredSyncer=true',
      '--metrics-bind-address=0',
      '--health-probe-bind-address=0',
    ]),
  );

  // The ManagedServiceAccounts whose tokens are synced to the profiles' namespace.
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: MEMBERS.map((cluster) => ({
      apiVersion: 'authentication.open-cluster-management.io/v1beta1',
      kind: 'ManagedServiceAccount',
      metadata: {
        name: MSA,
        namespace: cluster,
        labels: { 'authentication.open-cluster-management.io/sync-to-clusterprofile': 'true' },
      },
      spec: { rotation: { enabled: true, validity: '24h' } },
    })),
  });

  // OCM writes the profiles and cluster-proxy their access provider.
  await waitFor(
    'OCM to write a profile with an access provider per ManagedCluster',
    async () => {
      const items = await profiles();
      const done = items.filter((p) => (p.status?.accessProviders?.length ?? 0) > 0);
      return done.length === ALL.length ? items : undefined;
    },
    processes,
    90_000,
  );
  written = (await profiles()).find((p) => p.metadata?.name === 'cluster1');
  // Each cluster's agent mints its token on the managed cluster (this control plane) and reports it to the hub; the
  // syncer copies it next to the profiles. One agent at a time: each serves health probes on the fixed port 8000.
  for (const cluster of MEMBERS) {
    const agent = startOcmProcess(
      `msa-agent-${cluster}`,
      binaries.managedServiceAccount,
      [
        'agent',
        `--cluster-name=${cluster}`,
        `--spoke-kubeconfig=${controlPlane.adminKubeconfig}`,
        '--metrics-bind-address=0',
        '--health-probe-bind-address=0',
      ],
      { NAMESPACE: agentNamespace(cluster), HUB_KUBECONFIG: controlPlane.adminKubeconfig },
    );
    processes.push(agent);
    await waitFor(
      `managed-serviceaccount to write ${CONSUMER}/${cluster}-${MSA}`,
      async () => {
        const names = (await adminKubectl(['get', 'secrets', '-n', CONSUMER, '-o', 'name'])).split('\n');
        return names.includes(`secret/${cluster}-${MSA}`) ? true : undefined;
      },
      processes,
      60_000,
    );
    await agent.stop();
  }

  // The broken members: an empty token and something that is no token, in the layout the syncer writes.
  for (const [cluster, token] of [
    [BAD.empty, ''],
    [BAD.garbage, 'apiVersion: v1\nkind: Config\n'],
  ] as const) {
    await adminKubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `${cluster}-${MSA}`, namespace: CONSUMER },
        type: 'Opaque',
        data: { token: Buffer.from(token).toString('base64') },
      }),
    );
  }

  // The server mapping (see the file comment): cluster-proxy stops, its user server is stood in for.
  await processes.find((p) => p.name === 'cluster-proxy')!.stop();
  const tls = JSON.parse(
    await adminKubectl(['get', 'secret', 'cluster-proxy-user-serving-cert', '-n', ADDON_NS, '-o', 'json']),
  ) as { data: Record<string, string> };
  const decode = (key: string) => Buffer.from(tls.data[key] ?? '', 'base64').toString('utf8');
  userServer = await startUserServerStandIn({ cert: decode('tls.crt'), key: decode('tls.key') });
  for (const profile of await profiles()) {
    const server = profile.status!.accessProviders![0]!.cluster!.server!;
    const mapped = server.replace(
      `https://cluster-proxy-addon-user.${ADDON_NS}:9092/`,
      `https://127.0.0.1:${userServer.port}/`,
    );
    await adminKubectl([
      'patch',
      'clusterprofile',
      profile.metadata!.name!,
      '-n',
      CONSUMER,
      '--subresource=status',
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'replace', path: '/status/accessProviders/0/cluster/server', value: mapped }]),
    ]);
  }

  // The consumer's identity on the hub: it may get Secrets in its own namespace (OCM's README for cp-creds) and read
  // the profiles; its kubeconfig's context names that namespace, which both plugins read as theirs.
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'ocm-consumer', namespace: CONSUMER },
        rules: [
          { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
          { apiGroups: ['multicluster.x-k8s.io'], resources: ['clusterprofiles'], verbs: ['get', 'list', 'watch'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'ocm-consumer', namespace: CONSUMER },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ocm-consumer' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: READER }],
      },
    ],
  });
  const kubeconfig = parse(await readFile(await clientCertKubeconfig(READER), 'utf8')) as {
    contexts: Array<{ context: Record<string, string> }>;
  };
  for (const entry of kubeconfig.contexts) entry.context['namespace'] = CONSUMER;
  readerKubeconfig = path.join(controlPlane.workDir, 'ocm-reader.kubeconfig');
  await writeFile(readerKubeconfig, stringify(kubeconfig), { mode: 0o600 });

  cpCredsConfig = await providersFrom('providers.json', binaries.cpCredsPlugin, { KUBECONFIG: readerKubeconfig });
  secretReaderConfig = await providersFrom('providers-secret-reader.json', 'clusterprofile-token-request', {});
  for (const provider of secretReaderConfig.providers ?? [])
    provider.execConfig!.args = [...(provider.execConfig!.args ?? []), `--hub-kubeconfig=${readerKubeconfig}`];
}, 300_000);

afterAll(async () => {
  for (const p of processes) await p.stop();
  await userServer?.close();
  await adminKubectl(['delete', 'managedclusters', '--all', '--wait=false']).catch(() => undefined);
  for (const ns of [CONSUMER, ADDON_NS, ...ALL, ...ALL.map(agentNamespace)])
    await adminKubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => undefined);
  await restoreOurCrd();
}, 120_000);

describe("Open Cluster Management's own controllers write the profiles", () => {
  it('one profile per ManagedCluster, in the shape of the recipe', async () => {
    const recipe = parse(await readFile(path.join(RECIPE, 'clusterprofile.yaml'), 'utf8')) as ClusterProfile;
    const shape = (p: ClusterProfile | undefined) => ({
      name: p?.metadata?.name,
      namespace: p?.metadata?.namespace,
      labels: p?.metadata?.labels,
      spec: p?.spec,
      providers: p?.status?.accessProviders?.map((a) => ({
        name: a.name,
        server: a.cluster?.server,
        extensions: a.cluster?.extensions,
        hasCa: (a.cluster?.['certificate-authority-data'] ?? '') !== '',
      })),
      conditions: (p?.status as { conditions?: Array<Record<string, string>> } | undefined)?.conditions?.map(
        ({ type, status, reason, message }) => ({ type, status, reason, message }),
      ),
    });
    expect(shape(written)).toEqual(shape(recipe));
    expect((await profiles()).map((p) => p.metadata?.name).sort()).toEqual([...ALL].sort());
  });
});

describe('(a) OCM’s cp-creds plugin, run by our library and our fleet', () => {
  it('buildConfigFromClusterProfile execs cp-creds and reaches each member as its managed service account', async () => {
    for (const cluster of MEMBERS) {
      const profile = (await profiles()).find((p) => p.metadata?.name === cluster)!;
      const config = buildConfigFromClusterProfile(profile, cpCredsConfig);
      expect(await whoami(config)).toBe(`system:serviceaccount:${agentNamespace(cluster)}:${MSA}`);
    }
    expect(new Set(userServer!.clusters)).toEqual(new Set(MEMBERS));
  });

  it('ClusterProfileFleet engages every member through cp-creds; a member without a Secret fails alone', async () => {
    const fleet = await settledFleet(cpCredsConfig);
    try {
      await expectMembersReached(fleet, 'exec');
      const status = rows(fleet);
      expect(status[BAD.missing]).toMatchObject({ state: 'failing', lastError: { code: 'ERR_EXEC_FAILED' } });
      expect(status[BAD.missing]?.lastError?.message).toContain(`${BAD.missing}-${MSA}`);
    } finally {
      await fleet.close();
    }
  });
});

describe('(b) our own path, without cp-creds: clusterprofile-token-request --mode secret-reader', () => {
  it("reads OCM's Secret <cluster>-<msa>; bad Secrets and an unknown provider are coded errors on their member alone", async () => {
    // A producer's profile whose provider this providers file lacks, in the same inventory.
    const gke = parse(await readFile(path.join(REPO, 'examples/producers/gke/clusterprofile.yaml'), 'utf8')) as {
      metadata: Record<string, unknown>;
      status: unknown;
    };
    await applyAsAdmin({ ...gke, metadata: { name: 'gke-worker', namespace: CONSUMER }, status: undefined });
    await adminKubectl([
      'patch',
      'clusterprofile',
      'gke-worker',
      '-n',
      CONSUMER,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: gke.status }),
    ]);
    const fleet = await settledFleet(secretReaderConfig);
    try {
      await expectMembersReached(fleet, 'in-process');
      const status = rows(fleet);
      const secret = (cluster: string) => `secret ${CONSUMER}/${cluster}-${MSA}`;
      expect(status[BAD.missing]).toMatchObject({
        state: 'failing',
        lastError: {
          code: 'ERR_SECRET_READER_GET',
          message: expect.stringContaining(`${CONSUMER}/${BAD.missing}-${MSA}`),
        },
      });
      expect(status[BAD.empty]).toMatchObject({
        state: 'failing',
        lastError: { code: 'ERR_SECRET_READER_NO_TOKEN', message: `${secret(BAD.empty)} missing "token" key` },
      });
      expect(status[BAD.garbage]).toMatchObject({
        state: 'failing',
        lastError: { code: 'ERR_SECRET_READER_NOT_A_TOKEN' },
      });
      expect(status[BAD.garbage]?.lastError?.message).not.toContain('kind: Config');
      expect(fleet.get(BAD.garbage)?.error).toMatchObject({ path: `${secret(BAD.garbage)} data.token` });
      expect(status['gke-worker']).toMatchObject({
        state: 'invalid',
        lastError: { code: 'ERR_NO_MATCHING_PROVIDER', message: expect.stringContaining('"gke-worker"') },
      });
      expect(fleet.get('gke-worker')?.error).toMatchObject({ path: '$.status.accessProviders' });
      expect(fleet.status().counts).toMatchObject({ ready: MEMBERS.length, failing: 3, invalid: 1 });
    } finally {
      await fleet.close();
      await adminKubectl(['delete', 'clusterprofile', 'gke-worker', '-n', CONSUMER]);
    }
  });

  it('a Secret namespace the reader may not read: a 403 on each member naming the namespace and the missing verb', async () => {
    const config = structuredClone(secretReaderConfig);
    config.providers![0]!.execConfig!.args!.push(`--secret-namespace=${ADDON_NS}`);
    const fleet = await settledFleet(config);
    try {
      const row = rows(fleet)['cluster1'];
      expect(row).toMatchObject({ state: 'failing', lastError: { code: 'ERR_SECRET_READER_GET' } });
      expect(row?.lastError?.message).toContain(`${ADDON_NS}/cluster1-${MSA}`);
      expect(fleet.get('cluster1')?.error).toMatchObject({
        hint: `grant a Role with verbs ["get"] on resource "secrets" in namespace "${ADDON_NS}"`,
      });
    } finally {
      await fleet.close();
    }
  });
});
