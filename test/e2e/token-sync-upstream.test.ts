/**
 * `clusterprofile token sync` feeding upstream's reader plugins, on the real control plane: the sync (our built CLI,
 * bootstrapped by the fixture client-certificate plugin that holds only deploy/token-request-rbac.yaml's Role) writes
 * the hub Secrets, and upstream's own binaries — cluster-inventory-api v0.1.0 `plugins/kubeconfig-secretreader` and
 * `plugins/secretreader`, built unchanged from the Go module proxy (test/e2e/upstream-plugins) — read them as a
 * service account holding only deploy/secret-reader-rbac.yaml's Role. What each plugin prints must carry the token the
 * sync minted, and that token must be the member service account in a SelfSubjectReview. Last, the whole consumer path
 * upstream ships: cluster-inventory-api's pkg/access (the Go client) runs the kubeconfig-secretreader plugin from a
 * providers file and lists namespaces with what it returns.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyAsAdmin,
  e2eContext,
  exec,
  issueClientCert,
  clientCertKubeconfig,
  tempFile,
  tokenKubeconfig,
  whoami,
} from '../helpers/controlplane-e2e.js';
import { adminKubectl, CLUSTERPROFILE_BIN, REPO, templatedManifest } from './fixtures/tenant-cert-issuer.js';

const NAMESPACE = 'sync-fleet';
const CONTROLLERS = 'sync-controllers';
const WORKLOAD = 'sync-workload';
const READER = 'sync-reader';
const BOOTSTRAP_USER = 'e2e-sync-bootstrap';
const SYNC_USER = 'e2e-token-sync';
const PROFILE = 'spoke-1';
const WORKLOAD_USER = `system:serviceaccount:${NAMESPACE}:${WORKLOAD}`;
const crdFile = path.join(REPO, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml');
const fixturePlugin = path.join(REPO, 'test/e2e/fixtures/client-cert-plugin.mjs');

/** The extensions of the profile's access providers: one per reader plugin, as upstream's READMEs spell them. */
const KUBECONFIG_READER_CONFIG = { name: `${PROFILE}-kubeconfig`, key: 'value', namespace: NAMESPACE };
const SECRET_READER_CONFIG = { clusterName: PROFILE };

let caBase64 = '';
let profileFile = '';
let syncProvidersFile = '';
let syncKubeconfig = '';
let readerKubeconfig = '';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `clusterprofile token sync` for the profile, as the hub job runs it. */
function sync(extra: string[] = []): Promise<Run> {
  return exec(
    process.execPath,
    [
      CLUSTERPROFILE_BIN,
      'token',
      'sync',
      '-n',
      NAMESPACE,
      '--hub-kubeconfig',
      syncKubeconfig,
      '--clusterprofile-provider-file',
      syncProvidersFile,
      ...extra,
    ],
    {
      env: { PATH: process.env['PATH'] ?? '', HOME: path.dirname(syncKubeconfig) },
    },
  );
}

/** KUBERNETES_EXEC_INFO as client-go hands it to a plugin with provideClusterInfo: the access provider's cluster. */
function execInfo(config: Record<string, unknown>): string {
  const { controlPlane } = e2eContext();
  return JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: {
      interactive: false,
      cluster: { server: controlPlane.server, 'certificate-authority-data': caBase64, config },
    },
  });
}

/** One of upstream's plugin binaries, with the reader's hub kubeconfig (outside a pod, that is where it looks). */
function upstreamPlugin(binary: string, config: Record<string, unknown>): Promise<Run> {
  return exec(binary, [], {
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: path.dirname(readerKubeconfig),
      KUBECONFIG: readerKubeconfig,
      KUBERNETES_EXEC_INFO: execInfo(config),
    },
  });
}

/** A hub Secret's data, decoded, read as admin. */
async function secretData(name: string): Promise<Record<string, string>> {
  const secret = JSON.parse(await adminKubectl(['get', 'secret', name, '-n', NAMESPACE, '-o', 'json'])) as {
    data: Record<string, string>;
  };
  return Object.fromEntries(
    Object.entries(secret.data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
  );
}

describe("token sync feeds upstream's reader plugins", () => {
  beforeAll(async () => {
    const { controlPlane } = e2eContext();
    const caPem = await readFile(controlPlane.caFile, 'utf8');
    caBase64 = Buffer.from(caPem).toString('base64');
    await adminKubectl(['apply', '-f', crdFile]);
    await adminKubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/clusterprofiles.multicluster.x-k8s.io',
    ]);
    await adminKubectl(['create', 'namespace', NAMESPACE]);
    await adminKubectl(['create', 'namespace', CONTROLLERS]);

    // Member side: the bootstrap identity may only mint tokens for the workload account (the documented Role).
    await applyAsAdmin(
      await templatedManifest('deploy/token-request-rbac.yaml', [
        ['fleet-workload', WORKLOAD],
        ['fleet', NAMESPACE],
        ['hub-cluster', BOOTSTRAP_USER],
      ]),
    );
    // The workload may list namespaces: what the Go client does with it at the end.
    await applyAsAdmin({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: 'e2e-sync-namespace-lister' },
          rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'e2e-sync-namespace-lister' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'e2e-sync-namespace-lister' },
          subjects: [{ kind: 'ServiceAccount', name: WORKLOAD, namespace: NAMESPACE }],
        },
      ],
    });

    // Hub side: the documented Roles — the reader (a controller's service account) gets, the sync job writes.
    await adminKubectl(['create', 'serviceaccount', READER, '-n', CONTROLLERS]);
    await applyAsAdmin(
      await templatedManifest('deploy/secret-reader-rbac.yaml', [
        ['fleet', NAMESPACE],
        ['multicluster-controller', READER],
        ['controllers', CONTROLLERS],
      ]),
    );
    await applyAsAdmin({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'clusterprofile-token-sync', namespace: NAMESPACE },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'clusterprofile-token-sync' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: SYNC_USER }],
    });
    syncKubeconfig = await clientCertKubeconfig(SYNC_USER);
    const readerToken = (await adminKubectl(['create', 'token', READER, '-n', CONTROLLERS, '--duration', '1h'])).trim();
    // Upstream's plugins take the Secret namespace they do not get from the profile from the kubeconfig's context.
    readerKubeconfig = await tempFile(
      'reader.kubeconfig',
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'hub', cluster: { server: controlPlane.server, 'certificate-authority-data': caBase64 } }],
        users: [{ name: READER, user: { token: readerToken } }],
        contexts: [{ name: 'hub', context: { cluster: 'hub', user: READER, namespace: NAMESPACE } }],
        'current-context': 'hub',
      }),
    );

    const bootstrap = await issueClientCert(BOOTSTRAP_USER);
    syncProvidersFile = await tempFile(
      'sync-providers.json',
      JSON.stringify({
        providers: [
          {
            name: 'e2e-bootstrap',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: process.execPath,
              args: [fixturePlugin],
              env: [
                { name: 'E2E_PLUGIN_CERT_FILE', value: await tempFile('bootstrap.crt', bootstrap.cert) },
                { name: 'E2E_PLUGIN_KEY_FILE', value: await tempFile('bootstrap.key', bootstrap.key) },
              ],
              provideClusterInfo: true,
              interactiveMode: 'Never',
            },
          },
        ],
      }),
    );

    // One profile, three ways in: the sync's bootstrap provider, and one access provider per upstream reader plugin.
    const cluster = (config: Record<string, unknown>) => ({
      server: controlPlane.server,
      'certificate-authority-data': caBase64,
      extensions: [{ name: 'client.authentication.k8s.io/exec', extension: config }],
    });
    const status = {
      accessProviders: [
        { name: 'e2e-bootstrap', cluster: cluster({ namespace: NAMESPACE, serviceAccount: WORKLOAD }) },
        { name: 'kubeconfig-secretreader', cluster: cluster(KUBECONFIG_READER_CONFIG) },
        { name: 'secretreader', cluster: cluster(SECRET_READER_CONFIG) },
      ],
    };
    const object = {
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      kind: 'ClusterProfile',
      metadata: { name: PROFILE, namespace: NAMESPACE },
      spec: { displayName: PROFILE, clusterManager: { name: 'e2e' } },
    };
    await adminKubectl(['create', '-f', '-'], JSON.stringify(object));
    await adminKubectl([
      'patch',
      'clusterprofile',
      PROFILE,
      '-n',
      NAMESPACE,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ]);
    profileFile = await tempFile('profile.json', JSON.stringify({ ...object, status }));
  });

  afterAll(async () => {
    // Other files list ClusterProfiles across all namespaces (the harness runs no namespace controller to delete them).
    await adminKubectl(['delete', 'clusterprofiles', '--all', '-n', NAMESPACE, '--wait=true']);
    await adminKubectl(['delete', 'namespace', NAMESPACE, CONTROLLERS, '--wait=false']);
  });

  it("--layout kubeconfig-secretreader: upstream's kubeconfig-secretreader plugin returns the minted token, a working service-account token", async () => {
    const { binaries } = e2eContext();
    const result = await sync(['--layout', 'kubeconfig-secretreader']);
    expect(result.stderr).toMatch(new RegExp(`^${PROFILE}: token minted, renew at `));
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('');

    const data = await secretData(`${PROFILE}-kubeconfig`);
    expect(Object.keys(data)).toEqual(['value']);
    const written = parse(data['value']!) as { users: { user: { token: string } }[] };
    const minted = written.users[0]!.user.token;

    const plugin = await upstreamPlugin(binaries.kubeconfigSecretreaderPlugin, KUBECONFIG_READER_CONFIG);
    expect(plugin.stderr).toBe('');
    expect(plugin.code).toBe(0);
    // (v0.1.0's credentialplugin also echoes `spec: {interactive: false}`, which its README's "minimal" output omits.)
    const credential = JSON.parse(plugin.stdout) as {
      apiVersion: string;
      kind: string;
      status: Record<string, unknown>;
    };
    expect(credential).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' });
    expect(credential.status).toEqual({ token: minted });
    expect(
      (await whoami(await tokenKubeconfig('kubeconfig-secretreader', String(credential.status['token'])))).username,
    ).toBe(WORKLOAD_USER);

    // The same kubeconfig works as it is (kubectl): its cluster is the member's.
    expect((await whoami(await tempFile('from-secret.kubeconfig', data['value']!))).username).toBe(WORKLOAD_USER);
  });

  it("the default layout: upstream's secretreader plugin returns the minted token, a working service-account token", async () => {
    const { binaries } = e2eContext();
    const result = await sync();
    expect(result.stderr).toMatch(new RegExp(`^${PROFILE}: token minted, renew at `));
    expect(result.code).toBe(0);
    const minted = (await secretData(PROFILE))['token']!;

    const plugin = await upstreamPlugin(binaries.secretreaderPlugin, SECRET_READER_CONFIG);
    expect(plugin.stderr).toBe('');
    expect(plugin.code).toBe(0);
    const credential = JSON.parse(plugin.stdout) as {
      apiVersion: string;
      kind: string;
      status: Record<string, unknown>;
    };
    expect(credential).toMatchObject({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' });
    expect(credential.status).toEqual({ token: minted });
    expect((await whoami(await tokenKubeconfig('secretreader', minted))).username).toBe(WORKLOAD_USER);
  });

  it("upstream end to end: cluster-inventory-api's pkg/access runs the kubeconfig-secretreader plugin from a providers file and lists namespaces with the synced token", async () => {
    const { binaries } = e2eContext();
    const providers = await tempFile(
      'consumer-providers.json',
      JSON.stringify({
        providers: [
          {
            name: 'kubeconfig-secretreader',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: binaries.kubeconfigSecretreaderPlugin,
              env: [{ name: 'KUBECONFIG', value: readerKubeconfig }],
              provideClusterInfo: true,
            },
          },
        ],
      }),
    );
    const result = await exec(binaries.goclient, ['--providers-file', providers, '--clusterprofile', profileFile], {
      env: { PATH: process.env['PATH'] ?? '', HOME: path.dirname(providers) },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')).toContain(NAMESPACE);
  });
});
