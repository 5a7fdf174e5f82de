/**
 * ClusterProfileFleet with every provider of this package and with the hubs test/e2e/fleet.test.ts does not cover,
 * on the real control plane:
 *
 * - one inventory holding a tenant-cert member (the issuer of test/e2e/fixtures with the Kubernetes signer: a CSR
 *   signed by kube-controller-manager), an oidc member (client_credentials at the test OpenID Provider the API server
 *   trusts through structured authentication) and a token-request member, all obtained in-process through each
 *   binary's cache directory, each reached with a SelfSubjectReview as its own identity;
 * - a hub kubeconfig whose user is an exec plugin (a script printing the hub identity's client certificate);
 * - a hub that serves ClusterProfiles only as v1alpha2 (the CRD's v1alpha1 set to `served: false`, restored after).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AuthenticationV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterProfileFleet, type AccessConfig, type FleetEvent, type FleetMember } from '../../src/library/index.js';
import { applyAsAdmin, e2eContext, issueClientCert, kubectl, tempFile } from '../helpers/controlplane-e2e.js';
import { clusterProfileCrdFile, profileApiVersion, servesV1alpha2 } from '../helpers/e2e-crd.js';
import { clientCertKubeconfig as kubeconfigDocument } from '../helpers/controlplane.js';
import { startE2eIssuer, tempDir, type E2eIssuer } from './fixtures/tenant-cert-issuer.js';
import { fleetRbac } from '../helpers/fleet-rbac.js';

const crdFile = clusterProfileCrdFile;
const CRD = 'crd/clusterprofiles.multicluster.x-k8s.io';
const NS = 'fleet-members-e2e';
const SA_NS = 'fleet-members-sa';
const HUB_USER = 'e2e-fleet-members-hub';
const MINTER = 'e2e-fleet-members-minter';
const CONSUMER = 'fleet-hub-tc';
const TC_GROUP = 'fleet-members-tenants';

let caPem = '';
let hubKubeconfig = '';
let hubExecCount = '';
let cacheRoot = '';
let accessConfig: AccessConfig;
let issuer: E2eIssuer;
let oidcUser = '';

async function admin(args: string[], input?: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** A profile's status: one access provider reaching this API server with `extension` as the plugin's config. */
function statusOf(
  provider: string,
  extension: Record<string, unknown>,
  transition = '2026-01-01T00:00:00Z',
): Record<string, unknown> {
  const { controlPlane } = e2eContext();
  return {
    accessProviders: [
      {
        name: provider,
        cluster: {
          server: controlPlane.server,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          extensions: [{ name: 'client.authentication.k8s.io/exec', extension }],
        },
      },
    ],
    conditions: [
      { type: 'ControlPlaneHealthy', status: 'True', reason: 'Probe', message: 'e2e', lastTransitionTime: transition },
    ],
  };
}

/** Creates a profile as `apiVersion` and writes its status (a subresource); returns the last resourceVersion. */
async function createProfile(
  name: string,
  status: Record<string, unknown>,
  apiVersion: string = profileApiVersion,
): Promise<string> {
  const object = {
    apiVersion,
    kind: 'ClusterProfile',
    metadata: { name, namespace: NS },
    spec: { displayName: name, clusterManager: { name: 'e2e' } },
  };
  await admin(['create', '-f', '-'], JSON.stringify(object));
  return patchStatus(name, status, apiVersion);
}

/** A merge patch of the status through `apiVersion` (kubectl's `resource.version.group` form). */
async function patchStatus(
  name: string,
  status: Record<string, unknown>,
  apiVersion = 'multicluster.x-k8s.io/v1alpha1',
): Promise<string> {
  const resource = `clusterprofiles.${apiVersion.split('/')[1]}.multicluster.x-k8s.io`;
  const json = await admin([
    'patch',
    resource,
    name,
    '-n',
    NS,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
    '-o',
    'json',
  ]);
  return (JSON.parse(json) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function seen(fleet: ClusterProfileFleet, resourceVersion: string): Promise<true> {
  return waitFor(`resourceVersion ${resourceVersion}`, () => {
    const current = fleet.status().hub.resourceVersion;
    return current !== undefined && BigInt(current) >= BigInt(resourceVersion);
  });
}

async function whoamiThrough(member: FleetMember | undefined): Promise<{ username?: string; groups?: string[] }> {
  const review = await member!.client!.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return {
    ...(review.status?.userInfo?.username === undefined ? {} : { username: review.status.userInfo.username }),
    groups: review.status?.userInfo?.groups ?? [],
  };
}

function recorder(fleet: ClusterProfileFleet): FleetEvent[] {
  const events: FleetEvent[] = [];
  for (const type of ['added', 'updated', 'removed', 'unhealthy', 'credentialError', 'invalid', 'hubError'] as const)
    fleet.on(type, (event) => events.push(event));
  return events;
}

/** The status answer of a GET as the admin: the HTTP code kube-apiserver gives (kubectl get --raw). */
async function rawStatus(urlPath: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, ['get', '--raw', urlPath]);
  return result.code === 0
    ? 'ok'
    : /NotFound|not found|404/.test(result.stderr)
      ? 'not found'
      : `error: ${result.stderr}`;
}

beforeAll(async () => {
  const { controlPlane, oidc } = e2eContext();
  caPem = await readFile(controlPlane.caFile, 'utf8');
  await admin(['apply', '-f', crdFile]);
  await admin(['wait', '--for=condition=Established', '--timeout=60s', CRD]);
  await admin(['create', 'namespace', NS]);
  await admin(['create', 'namespace', SA_NS]);
  await admin(['create', 'serviceaccount', 'tr-member', '-n', SA_NS]);
  await applyAsAdmin(fleetRbac({ inventory: NS, accounts: SA_NS, hubUser: HUB_USER, minter: MINTER }));

  // The hub user is an exec plugin: a script printing the hub identity's client certificate, counting its runs.
  const hubPair = await issueClientCert(HUB_USER);
  const certFile = await tempFile('hub.crt', hubPair.cert);
  const keyFile = await tempFile('hub.key', hubPair.key);
  hubExecCount = await tempFile('hub-exec.count', '');
  const plugin = await tempFile(
    'hub-exec.mjs',
    [
      "import { appendFileSync, readFileSync } from 'node:fs';",
      "appendFileSync(process.env.HUB_EXEC_COUNT, 'x');",
      'const status = {',
      "  clientCertificateData: readFileSync(process.env.HUB_CERT, 'utf8'),",
      "  clientKeyData: readFileSync(process.env.HUB_KEY, 'utf8'),",
      '  expirationTimestamp: new Date(Date.now() + 3_600_000).toISOString(),',
      '};',
      "process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status }));",
    ].join('\n'),
  );
  hubKubeconfig = await tempFile(
    'hub-exec.kubeconfig',
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'hub',
          cluster: { server: controlPlane.server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
        },
      ],
      users: [
        {
          name: 'hub-exec',
          user: {
            exec: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: process.execPath,
              args: [plugin],
              env: [
                { name: 'HUB_CERT', value: certFile },
                { name: 'HUB_KEY', value: keyFile },
                { name: 'HUB_EXEC_COUNT', value: hubExecCount },
              ],
              interactiveMode: 'Never',
            },
          },
        },
      ],
      contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'hub-exec' } }],
      'current-context': 'hub',
    }),
  );

  issuer = await startE2eIssuer({
    suffix: 'fleet',
    providerClusterID: 'fleet-member-tc',
    consumerClusterID: CONSUMER,
    groups: [TC_GROUP],
  });
  const minterKubeconfig = await tempFile(
    'minter.kubeconfig',
    stringify(kubeconfigDocument(controlPlane.server, caPem, MINTER, await issueClientCert(MINTER))),
  );
  const oidcClient = oidc.clients['basic'];
  if (oidcClient?.clientId === undefined || oidcClient.clientSecret === undefined)
    throw new Error('the test OP offers no basic client');
  oidcUser = `${oidc.usernamePrefix}${oidcClient.clientId}`;
  cacheRoot = await tempDir('fleet-members-cache');
  const exec = (command: string, args: string[]) => ({
    apiVersion: 'client.authentication.k8s.io/v1' as const,
    command,
    args,
    provideClusterInfo: true,
    interactiveMode: 'Never' as const,
  });
  accessConfig = {
    providers: [
      {
        name: 'tenant-cert',
        execConfig: exec('clusterprofile-tenant-cert', ['--cluster-id', CONSUMER, '--key-file', issuer.keyFile]),
      },
      {
        name: 'oidc',
        execConfig: exec('clusterprofile-oidc', [
          '--grant',
          'client_credentials',
          '--client-secret-file',
          await tempFile('oidc.secret', `${oidcClient.clientSecret}\n`),
        ]),
      },
      {
        name: 'token-request',
        execConfig: exec('clusterprofile-token-request', ['--bootstrap-kubeconfig', minterKubeconfig]),
      },
    ],
  };
  await createProfile('tc-member', statusOf('tenant-cert', issuer.config));
  await createProfile(
    'oidc-member',
    statusOf('oidc', {
      issuerURL: oidc.issuer,
      issuerCA: Buffer.from(oidc.caPem).toString('base64'),
      audience: oidc.audience,
      clientID: oidcClient.clientId,
    }),
  );
  await createProfile(
    'tr-member',
    statusOf('token-request', { namespace: SA_NS, serviceAccount: 'tr-member', expirationSeconds: 600 }),
  );
}, 180_000);

afterAll(async () => {
  await issuer?.issuer.stop();
  // The CRD serves v1alpha1 again whatever happened, and other files list ClusterProfiles across all namespaces.
  await admin(['apply', '-f', crdFile]).catch(() => undefined);
  await admin(['delete', 'clusterprofiles.v1alpha2.multicluster.x-k8s.io', '--all', '-n', NS, '--wait=true']).catch(
    () => undefined,
  );
  await admin(['delete', 'clusterprofiles', '--all', '-n', NS, '--wait=true']).catch(() => undefined);
});

describe('a fleet of tenant-cert, oidc and token-request members, through a hub user that is an exec plugin', () => {
  let fleet: ClusterProfileFleet;

  afterAll(async () => {
    await fleet?.close();
  });

  it('engages every member with its own provider in-process; each is its own identity on the member cluster', async () => {
    fleet = new ClusterProfileFleet({
      namespace: NS,
      accessConfig,
      hub: { kubeconfig: hubKubeconfig },
      env: { ...process.env, KUBECACHEDIR: cacheRoot },
      fetchTimeoutMs: 30_000,
    });
    await fleet.start();
    await fleet.settled();
    const rows = Object.fromEntries(fleet.status().clusters.map((row) => [row.name, row]));
    for (const [name, provider] of [
      ['tc-member', 'tenant-cert'],
      ['oidc-member', 'oidc'],
      ['tr-member', 'token-request'],
    ] as const) {
      expect(rows[name], JSON.stringify(rows[name]?.lastError)).toMatchObject({
        state: 'ready',
        engaged: true,
        provider,
        mode: 'in-process',
        fetches: 1,
      });
    }

    const tc = await whoamiThrough(fleet.get('tc-member'));
    expect(tc.username).toBe(CONSUMER);
    expect(tc.groups).toContain(TC_GROUP);
    expect((await whoamiThrough(fleet.get('oidc-member'))).username).toBe(oidcUser);
    expect((await whoamiThrough(fleet.get('tr-member'))).username).toBe(`system:serviceaccount:${SA_NS}:tr-member`);

    // Each credential is in its binary's cache directory, where kubectl running the plugin would find it.
    for (const provider of ['tenant-cert', 'oidc', 'token-request']) {
      expect(
        readdirSync(path.join(cacheRoot, 'clusterprofile', provider)).filter((name) => name.endsWith('.json')),
      ).toHaveLength(1);
    }
    // The hub's exec plugin ran once: the list and the watch share its credential.
    expect(readFileSync(hubExecCount, 'utf8')).toBe('x');
    expect(fleet.status().hub).toMatchObject({ version: 'v1alpha1', synced: true });
  });

  it('a restart of the fleet is served by the shared cache: no provider issues again', async () => {
    const again = new ClusterProfileFleet({
      namespace: NS,
      accessConfig,
      hub: { kubeconfig: hubKubeconfig },
      env: { ...process.env, KUBECACHEDIR: cacheRoot },
      clients: false,
    });
    const before = Object.fromEntries(
      ['tenant-cert', 'oidc', 'token-request'].map((provider) => {
        const dir = path.join(cacheRoot, 'clusterprofile', provider);
        const entry = readdirSync(dir).find((name) => name.endsWith('.json'))!;
        return [provider, readFileSync(path.join(dir, entry), 'utf8')];
      }),
    );
    try {
      await again.start();
      await again.settled();
      expect(again.status().counts).toMatchObject({ ready: 3 });
      for (const [provider, text] of Object.entries(before)) {
        const dir = path.join(cacheRoot, 'clusterprofile', provider);
        const entries = readdirSync(dir).filter((name) => name.endsWith('.json'));
        expect(entries).toHaveLength(1);
        expect(readFileSync(path.join(dir, entries[0]!), 'utf8')).toBe(text);
      }
    } finally {
      await again.close();
    }
  });
});

// Upstream's v0.1.3 CRD serves no v1alpha2 (test/helpers/e2e-crd.ts): nothing to switch to.
describe.runIf(servesV1alpha2)('a hub serving ClusterProfiles only as v1alpha2', () => {
  let fleet: ClusterProfileFleet | undefined;

  afterAll(async () => {
    await fleet?.close();
    await admin(['apply', '-f', crdFile]);
    await admin(['wait', '--for=condition=Established', '--timeout=60s', CRD]);
    await waitFor(
      'v1alpha1 served again',
      async () => (await rawStatus(`/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NS}/clusterprofiles`)) === 'ok',
    );
  });

  it('lists and watches v1alpha2: members engaged, a status-only update rebuilds nothing, a new profile is added', async () => {
    const versions = JSON.parse(await admin(['get', CRD, '-o', 'json'])) as { spec: { versions: { name: string }[] } };
    const v1alpha1 = versions.spec.versions.findIndex((version) => version.name === 'v1alpha1');
    await admin([
      'patch',
      CRD,
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'replace', path: `/spec/versions/${v1alpha1}/served`, value: false }]),
    ]);
    await waitFor(
      'v1alpha1 no longer served',
      async () =>
        (await rawStatus(`/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NS}/clusterprofiles`)) === 'not found',
    );
    expect(await rawStatus(`/apis/multicluster.x-k8s.io/v1alpha2/namespaces/${NS}/clusterprofiles`)).toBe('ok');

    const { controlPlane } = e2eContext();
    const hub = await tempFile(
      'hub-v1alpha2.kubeconfig',
      stringify(kubeconfigDocument(controlPlane.server, caPem, HUB_USER, await issueClientCert(HUB_USER))),
    );
    fleet = new ClusterProfileFleet({
      namespace: NS,
      accessConfig,
      hub: { kubeconfig: hub },
      env: { ...process.env, KUBECACHEDIR: cacheRoot },
    });
    const events = recorder(fleet);
    await fleet.start();
    await fleet.settled();
    expect(fleet.status().hub).toMatchObject({ version: 'v1alpha2', synced: true });
    expect(fleet.status().counts).toMatchObject({ ready: 3 });
    expect((await whoamiThrough(fleet.get('tr-member'))).username).toBe(`system:serviceaccount:${SA_NS}:tr-member`);

    const from = events.length;
    const client = fleet.get('tr-member')!.client;
    await seen(
      fleet,
      await patchStatus(
        'tr-member',
        statusOf(
          'token-request',
          { namespace: SA_NS, serviceAccount: 'tr-member', expirationSeconds: 600 },
          '2030-01-01T00:00:00Z',
        ),
        'multicluster.x-k8s.io/v1alpha2',
      ),
    );
    expect(events.slice(from)).toEqual([]);
    expect(fleet.get('tr-member')!.client).toBe(client);

    await seen(
      fleet,
      await createProfile(
        'tr-member-v2',
        statusOf('token-request', { namespace: SA_NS, serviceAccount: 'tr-member', expirationSeconds: 900 }),
        'multicluster.x-k8s.io/v1alpha2',
      ),
    );
    await waitFor('tr-member-v2 engaged', () => fleet!.get('tr-member-v2')?.engaged === true);
    expect(
      events
        .slice(from)
        .filter((event) => event.type === 'added')
        .map((event) => event.name),
    ).toEqual(['tr-member-v2']);
    expect((await whoamiThrough(fleet.get('tr-member-v2'))).username).toBe(`system:serviceaccount:${SA_NS}:tr-member`);
  });
});
