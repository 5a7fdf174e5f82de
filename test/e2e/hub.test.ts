/**
 * Hub scenario: the ClusterProfile CRD from schemas/crd installed on the real API server, ClusterProfile objects with
 * accessProviders in their status, `clusterprofile kubeconfig --namespace --name` reading them from the hub, and a
 * controller-style loop over every profile reaching its member cluster through buildConfigFromClusterProfile.
 * The "member clusters" are this same API server reached through different ClusterProfiles; the credential comes
 * from the fixture client-certificate plugin (the tenant-cert / token-request / oidc scenarios swap in our plugins).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthenticationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadKubeAccess } from '../../src/kube/kubeconfig-loader.js';
import { createKubeTransport } from '../../src/kube/transport.js';
import { buildConfigFromClusterProfile, loadAccessConfig, type ClusterProfile } from '../../src/library/index.js';
import {
  applyAsAdmin,
  clusterProfileDocument,
  e2eContext,
  exec,
  issueClientCert,
  kubectl,
  tempFile,
  whoami,
} from '../helpers/controlplane-e2e.js';
import { clusterProfileCrdFile, profileApiVersion } from '../helpers/e2e-crd.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const crdFile = clusterProfileCrdFile;
const plugin = path.join(repo, 'test/e2e/fixtures/client-cert-plugin.mjs');
const cli = path.join(repo, 'bin/clusterprofile.mjs');
const NAMESPACE = 'fleet';
const MEMBERS = ['member-1', 'member-2', 'member-3'];
const USER = 'e2e-fleet-controller';

let providersFile = '';

async function adminOk(args: string[], input?: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

describe('hub: ClusterProfiles on the API server', () => {
  beforeAll(async () => {
    const { controlPlane } = e2eContext();
    await adminOk(['apply', '-f', crdFile]);
    await adminOk([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/clusterprofiles.multicluster.x-k8s.io',
    ]);
    await adminOk(['create', 'namespace', NAMESPACE]);
    await applyAsAdmin({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRole',
          metadata: { name: 'e2e-hub-namespace-lister' },
          rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list'] }],
        },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'ClusterRoleBinding',
          metadata: { name: 'e2e-hub-namespace-lister' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'e2e-hub-namespace-lister' },
          subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
        },
      ],
    });

    const pair = await issueClientCert(USER, ['e2e-fleet']);
    const providers = {
      providers: [
        {
          name: 'e2e-client-cert',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [plugin],
            env: [
              { name: 'E2E_PLUGIN_CERT_FILE', value: await tempFile('fleet.crt', pair.cert) },
              { name: 'E2E_PLUGIN_KEY_FILE', value: await tempFile('fleet.key', pair.key) },
            ],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ],
    };
    providersFile = await tempFile('providers.json', JSON.stringify(providers));

    const caPem = await readFile(controlPlane.caFile, 'utf8');
    for (const name of MEMBERS) {
      const doc = clusterProfileDocument({
        name,
        namespace: NAMESPACE,
        provider: 'e2e-client-cert',
        server: controlPlane.server,
        caPem,
      });
      const { status, ...object } = doc;
      object.apiVersion = profileApiVersion;
      await adminOk(['create', '-f', '-'], JSON.stringify(object));
      // status is a subresource: written separately, as a cluster manager would.
      await adminOk([
        'patch',
        'clusterprofile',
        name,
        '-n',
        NAMESPACE,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status }),
      ]);
    }
  });

  it('stores ClusterProfiles with accessProviders in their status', async () => {
    const list = JSON.parse(await adminOk(['get', 'clusterprofiles', '-n', NAMESPACE, '-o', 'json'])) as {
      items: ClusterProfile[];
    };
    expect(list.items.map((p) => p.metadata.name).sort()).toEqual(MEMBERS);
    for (const p of list.items) expect(p.status?.accessProviders?.[0]?.name).toBe('e2e-client-cert');
  });

  it('`clusterprofile kubeconfig --namespace --name` reads the profile from the hub; kubectl with it authenticates through the plugin', async () => {
    const { controlPlane } = e2eContext();
    const result = await exec(
      process.execPath,
      [
        cli,
        'kubeconfig',
        '--namespace',
        NAMESPACE,
        '--name',
        'member-2',
        '--clusterprofile-provider-file',
        providersFile,
      ],
      {
        env: { ...process.env, KUBECONFIG: controlPlane.adminKubeconfig },
      },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const kubeconfig = await tempFile('member-2.kubeconfig', result.stdout);
    const me = await whoami(kubeconfig);
    expect(me.username).toBe(USER);
    expect(me.groups).toContain('e2e-fleet');
    // RBAC still limits the plugin's identity.
    const secrets = await kubectl(kubeconfig, ['get', 'secrets', '-n', 'kube-system']);
    expect(secrets.code).not.toBe(0);
    expect(secrets.stderr).toContain(`User "${USER}" cannot list resource "secrets"`);
  });

  it('a profile the hub does not have is ERR_PROFILE_NOT_FOUND; the API server names the object in that 404 and names nothing for a version it does not serve (the rule the v1alpha2 fallback relies on)', async () => {
    const { controlPlane } = e2eContext();
    const result = await exec(
      process.execPath,
      [
        cli,
        'kubeconfig',
        '--namespace',
        NAMESPACE,
        '--name',
        'member-9',
        '--clusterprofile-provider-file',
        providersFile,
      ],
      {
        env: { ...process.env, KUBECONFIG: controlPlane.adminKubeconfig },
      },
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      `ERR_PROFILE_NOT_FOUND: ClusterProfile ${NAMESPACE}/member-9 not found on the hub: clusterprofiles.multicluster.x-k8s.io "member-9" not found`,
    );
    expect(result.stderr).toContain('hint: check --namespace and --name');

    const access = await loadKubeAccess({ kubeconfig: controlPlane.adminKubeconfig }, { env: {}, cwd: repo });
    const kube = createKubeTransport(access.endpoint, access.credential);
    try {
      const missing = await kube.send({
        method: 'GET',
        path: `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${NAMESPACE}/clusterprofiles/member-9`,
      });
      expect(missing.status).toBe(404);
      expect((missing.body as { details?: { name?: string } }).details?.name).toBe('member-9');
      const unserved = await kube.send({
        method: 'GET',
        path: `/apis/multicluster.x-k8s.io/v1alpha9/namespaces/${NAMESPACE}/clusterprofiles/member-1`,
      });
      expect(unserved.status).toBe(404);
      expect((unserved.body as { details?: { name?: string } }).details?.name ?? '').toBe('');
    } finally {
      await kube.close();
    }
  });

  it('a controller-style loop over every ClusterProfile of the inventory reaches each member cluster with buildConfigFromClusterProfile', async () => {
    // One namespace is one inventory (KEP-4322): other e2e files keep profiles of their own in theirs.
    const list = JSON.parse(await adminOk(['get', 'clusterprofiles', '-n', NAMESPACE, '-o', 'json'])) as {
      items: ClusterProfile[];
    };
    const accessConfig = await loadAccessConfig(providersFile);
    const reached: Record<string, { username: string | undefined; namespaces: string[] }> = {};
    for (const profile of list.items) {
      const kc = buildConfigFromClusterProfile(profile, accessConfig);
      const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
      const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      reached[profile.metadata.name] = {
        username: review.status?.userInfo?.username,
        namespaces: namespaces.items.map((n) => n.metadata?.name ?? ''),
      };
    }
    expect(Object.keys(reached).sort()).toEqual(MEMBERS);
    for (const r of Object.values(reached)) {
      expect(r.username).toBe(USER);
      expect(r.namespaces).toEqual(expect.arrayContaining(['default', 'kube-system', NAMESPACE]));
    }
    // (The same profiles rendered as YAML: handy when a test fails.)
    expect(stringify(list.items[0]?.status)).toContain('e2e-client-cert');
  });
});
