/**
 * oidc scenario on the real control plane: tokens obtained by OUR plugin (bin/clusterprofile-oidc.mjs) from the test
 * OpenID Provider are accepted by kube-apiserver through structured authentication (jwt authenticator: username =
 * `oidc:` + sub, groups = `oidc:` + groups, audience https://kubernetes.test), for client_credentials and for RFC 8693
 * token exchange of a subject JWT read from a file (what a projected service-account token is). Each grant is driven
 * three ways: the plugin as a child process, kubectl with a kubeconfig rendered by `clusterprofile kubeconfig
 * --profile`, and buildConfigFromClusterProfile from the built library. Each checks who the API server says we are
 * (SelfSubjectReview) and that RBAC holds: the Role bound to that oidc user allows configmaps in one namespace, a call
 * outside it is 403. A token for another audience is refused by the plugin itself before it is printed.
 */
import { mkdir, mkdtemp, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AuthenticationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { decodeJwt } from 'jose';
import { Agent, fetch } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildConfigFromClusterProfile, loadAccessConfig, type ClusterProfile } from '../../dist/library/index.js';
import {
  applyAsAdmin,
  clusterProfileDocument,
  e2eContext,
  exec,
  kubectl,
  tempFile,
  tokenKubeconfig,
  whoami,
} from '../helpers/controlplane-e2e.js';
import { signSubjectTokenWith } from '../helpers/oidc-op.js';
import { OIDC_BIN, runOidcPlugin, type OidcRun } from '../helpers/oidc-plugin.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const cli = path.join(repo, 'bin/clusterprofile.mjs');
const NAMESPACE = 'oidc-e2e';
/** The subject of the harness-signed subject token (a projected service-account token of a fleet controller). */
const SUBJECT = 'system:serviceaccount:fleet:oidc-manager';

interface Grant {
  name: string;
  clientID: string;
  /** The `sub` the OP puts in the access token: the client for client_credentials, the subject token's for exchange. */
  sub: string;
  /** Plugin flags (without --cache-dir). */
  args: string[];
}

const grants: Grant[] = [];

/** A fresh 0700 directory inside the control plane's work dir (removed by the global teardown). */
async function tempDir(prefix: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const parent = path.join(controlPlane.workDir, 'files');
  await mkdir(parent, { recursive: true });
  return mkdtemp(path.join(parent, prefix));
}

/** The per-cluster part of the plugin's config: the ClusterProfile's exec extension. */
function execExtension(audience?: string): Record<string, unknown> {
  const { oidc } = e2eContext();
  return {
    issuerURL: oidc.issuer,
    issuerCA: Buffer.from(oidc.caPem).toString('base64'),
    audience: audience ?? oidc.audience,
  };
}

async function runPlugin(grant: Grant, cacheDir: string, audience?: string): Promise<OidcRun> {
  const { controlPlane } = e2eContext();
  const caPem = await readFile(controlPlane.caFile, 'utf8');
  const execInfo = JSON.stringify({
    kind: 'ExecCredential',
    apiVersion: 'client.authentication.k8s.io/v1',
    spec: {
      interactive: false,
      cluster: {
        server: controlPlane.server,
        'certificate-authority-data': Buffer.from(caPem).toString('base64'),
        config: { ...execExtension(audience), clientID: grant.clientID },
      },
    },
  });
  return runOidcPlugin([...grant.args, '--cache-dir', cacheDir], execInfo);
}

/** A GET with a bearer token against the API server; the status code as kube-apiserver answered. */
async function apiGet(token: string, urlPath: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const { controlPlane } = e2eContext();
  const dispatcher = new Agent({ connect: { ca: await readFile(controlPlane.caFile, 'utf8') } });
  try {
    const response = await fetch(`${controlPlane.server}${urlPath}`, {
      dispatcher,
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  } finally {
    await dispatcher.close();
  }
}

/** A ClusterProfile file and a providers file whose only provider execs our plugin for `grant`. */
async function profileFiles(
  grant: Grant,
  cacheDir: string,
): Promise<{ profile: ClusterProfile; profileFile: string; providersFile: string }> {
  const { controlPlane } = e2eContext();
  const caPem = await readFile(controlPlane.caFile, 'utf8');
  const provider = `oidc-${grant.name}`;
  const profile = clusterProfileDocument({
    name: `oidc-member-${grant.name}`,
    namespace: 'fleet',
    provider,
    server: controlPlane.server,
    caPem,
    execExtension: { ...execExtension(), clientID: grant.clientID },
  }) as unknown as ClusterProfile;
  const providers = {
    providers: [
      {
        name: provider,
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: process.execPath,
          args: [OIDC_BIN, ...grant.args, '--cache-dir', cacheDir],
          provideClusterInfo: true,
          interactiveMode: 'Never',
        },
      },
    ],
  };
  return {
    profile,
    profileFile: await tempFile(`${grant.name}.profile.json`, JSON.stringify(profile)),
    providersFile: await tempFile(`${grant.name}.providers.json`, JSON.stringify(providers)),
  };
}

beforeAll(async () => {
  const { oidc } = e2eContext();
  const secret = oidc.clients['basic'];
  const exchange = oidc.clients['exchange'];
  if (secret?.clientId === undefined || secret.clientSecret === undefined || exchange?.clientId === undefined) {
    throw new Error(
      `the test OP does not offer the basic and exchange clients: ${Object.keys(oidc.clients).join(', ')}`,
    );
  }
  grants.push(
    {
      name: 'client-credentials',
      clientID: secret.clientId,
      sub: secret.clientId,
      args: [
        '--grant',
        'client_credentials',
        '--client-secret-file',
        await tempFile('client.secret', `${secret.clientSecret}\n`),
      ],
    },
    {
      name: 'token-exchange',
      clientID: exchange.clientId,
      sub: SUBJECT,
      // No client secret: the subject token (signed by the issuer the OP trusts for exchange) is the only proof.
      args: [
        '--grant',
        'token_exchange',
        '--subject-token-file',
        await tempFile('subject.token', await signSubjectTokenWith(oidc.subjectTokenKey, { sub: SUBJECT })),
      ],
    },
  );

  await applyAsAdmin({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'fleet-settings', namespace: NAMESPACE },
        data: { tier: 'e2e' },
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'oidc-configmap-reader', namespace: NAMESPACE },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'oidc-configmap-reader', namespace: NAMESPACE },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'oidc-configmap-reader' },
        subjects: grants.map((g) => ({
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'User',
          name: `${oidc.usernamePrefix}${g.sub}`,
        })),
      },
    ],
  });
});

// `describe.for` cannot see `grants` (filled in beforeAll); the grant is looked up by name inside each test.
describe.for(['client-credentials', 'token-exchange'])(
  'oidc %s: a token from our plugin is accepted by kube-apiserver',
  (name) => {
    const grant = (): Grant => grants.find((g) => g.name === name)!;

    it('the plugin as a child process: its token authenticates as oidc:<sub> in oidc:machines; the bound Role allows configmaps, anything else is 403', async () => {
      const { oidc } = e2eContext();
      const g = grant();
      const run = await runPlugin(g, await tempDir('oidc-cache-'));
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const credential = JSON.parse(run.stdout) as {
        kind: string;
        status: { token: string; expirationTimestamp: string };
      };
      expect(credential.kind).toBe('ExecCredential');
      const claims = decodeJwt(credential.status.token);
      expect(claims).toMatchObject({ iss: oidc.issuer, aud: oidc.audience, sub: g.sub });

      const me = await whoami(await tokenKubeconfig(`oidc-${name}`, credential.status.token));
      expect(me.username).toBe(`${oidc.usernamePrefix}${g.sub}`);
      expect(me.groups).toEqual(expect.arrayContaining([`${oidc.groupsPrefix}machines`, 'system:authenticated']));

      const allowed = await apiGet(
        credential.status.token,
        `/api/v1/namespaces/${NAMESPACE}/configmaps/fleet-settings`,
      );
      expect(allowed.status).toBe(200);
      expect(allowed.body).toMatchObject({ kind: 'ConfigMap', data: { tier: 'e2e' } });
      const secrets = await apiGet(credential.status.token, `/api/v1/namespaces/${NAMESPACE}/secrets`);
      expect(secrets.status).toBe(403);
      expect(String(secrets.body['message'])).toContain(
        `User "${oidc.usernamePrefix}${g.sub}" cannot list resource "secrets"`,
      );
      const elsewhere = await apiGet(credential.status.token, '/api/v1/namespaces/kube-system/configmaps');
      expect(elsewhere.status).toBe(403);
    });

    it('kubectl with a kubeconfig from `clusterprofile kubeconfig --profile` execs the plugin: same identity, same limits', async () => {
      const { oidc } = e2eContext();
      const g = grant();
      const { profileFile, providersFile } = await profileFiles(g, await tempDir('oidc-cache-'));
      const rendered = await exec(process.execPath, [
        cli,
        'kubeconfig',
        '--profile',
        profileFile,
        '--clusterprofile-provider-file',
        providersFile,
      ]);
      expect(rendered.stderr).toBe('');
      expect(rendered.code).toBe(0);
      // The exec extension travels to the plugin as a cluster extension (spec.cluster.config).
      expect(rendered.stdout).toContain('client.authentication.k8s.io/exec');
      expect(rendered.stdout).toContain(oidc.issuer);
      const kubeconfig = await tempFile(`oidc-${name}.kubeconfig`, rendered.stdout);

      const me = await whoami(kubeconfig);
      expect(me.username).toBe(`${oidc.usernamePrefix}${g.sub}`);
      expect(me.groups).toContain(`${oidc.groupsPrefix}machines`);

      const configmaps = await kubectl(kubeconfig, ['get', 'configmaps', '-n', NAMESPACE, '-o', 'name']);
      expect(configmaps.stderr).toBe('');
      expect(configmaps.stdout.trim().split('\n')).toContain('configmap/fleet-settings');
      const secrets = await kubectl(kubeconfig, ['get', 'secrets', '-n', NAMESPACE]);
      expect(secrets.code).not.toBe(0);
      expect(secrets.stderr).toContain('(Forbidden)');
      expect(secrets.stderr).toContain(`User "${oidc.usernamePrefix}${g.sub}" cannot list resource "secrets"`);
    });

    it('buildConfigFromClusterProfile (the built library) with the same profile: SelfSubjectReview and a 403 outside the Role', async () => {
      const { oidc } = e2eContext();
      const g = grant();
      const { profile, providersFile } = await profileFiles(g, await tempDir('oidc-cache-'));
      const kc = buildConfigFromClusterProfile(profile, await loadAccessConfig(providersFile));
      const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      expect(review.status?.userInfo?.username).toBe(`${oidc.usernamePrefix}${g.sub}`);
      expect(review.status?.userInfo?.groups).toContain(`${oidc.groupsPrefix}machines`);

      const core = kc.makeApiClient(CoreV1Api);
      const configmaps = await core.listNamespacedConfigMap({ namespace: NAMESPACE });
      expect(configmaps.items.map((c) => c.metadata?.name)).toContain('fleet-settings');
      const refused = await core.listNamespacedSecret({ namespace: NAMESPACE }).then(
        () => undefined,
        (error: unknown) => error as { code?: number },
      );
      expect(refused?.code).toBe(403);
    });
  },
);

describe('oidc: a token for another audience', () => {
  it('is refused by the plugin itself (ERR_OIDC_TOKEN_INVALID): nothing on stdout, nothing cached', async () => {
    // The cluster is configured for the audience `member-2` (not a URI, so the plugin sends it as the RFC 8693
    // `audience` parameter). The OP ignores that parameter for client_credentials and issues its default
    // resource's token (aud https://kubernetes.test: one THIS API server would accept). The plugin must not hand a
    // token minted for another audience to the cluster it was asked about.
    const g = grants.find((x) => x.name === 'client-credentials')!;
    const cacheDir = await tempDir('oidc-cache-');
    const run = await runPlugin(g, cacheDir, 'member-2');
    expect(run.stdout).toBe('');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('ERR_OIDC_TOKEN_INVALID');
    expect(run.stderr).toContain('wrong audience ("aud")');
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect((await readdir(cacheDir)).filter((f) => f.endsWith('.json'))).toEqual([]);
    // and no token leaks through the error message either
    expect(run.stderr).not.toMatch(/eyJ[\w-]+\.eyJ/);
  });
});
