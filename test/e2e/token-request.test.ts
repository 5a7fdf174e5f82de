/**
 * token-request bootstrapped from tenant-cert on the real control plane. The tenant-cert identity (CN = the consumer
 * cluster ID, certificate approved by the issuer and signed by kube-controller-manager) holds only the Role of
 * deploy/token-request-rbac.yaml (applied with its names replaced): `create` on `serviceaccounts/token` for one
 * ServiceAccount. The plugin mints 600-second tokens that kube-apiserver's service-account authenticator accepts as
 * that ServiceAccount, with the rights the manifest's example binding gives it (ClusterRole view in one namespace).
 *
 * Renewal without waiting ten minutes is proven in two ways:
 * - in-process with a controlled clock: the provider runs through runPlugin(tokenRequestProvider, {now}) against the
 *   real API server; moving its clock to the first token's renewal point makes it mint a new token, which the API
 *   server accepts. (The bootstrap identity there is the same tenant-cert certificate, handed over as a kubeconfig:
 *   `--bootstrap tenant-cert` would run the tenant-cert handshake on the same shifted clock, and the real
 *   kube-controller-manager's 10-minute certificate is already due for renewal on that clock.)
 * - at real time, with the binary and `--bootstrap tenant-cert`: the token is bound to a Secret (boundObjectRef);
 *   deleting the Secret makes the API server reject it, and the token the plugin mints afterwards (--force-refresh,
 *   as a client does after a 401) works.
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPlugin } from '../../src/plugin/run.js';
import { tokenRequestProvider } from '../../src/providers/token-request/provider.js';
import { clientCertKubeconfig as kubeconfigDocument } from '../helpers/controlplane.js';
import { applyAsAdmin, e2eContext, kubectl, tempFile, tokenKubeconfig, whoami } from '../helpers/controlplane-e2e.js';
import { runNode } from '../helpers/tenant-cert-plugin-run.js';
import {
  adminKubectl,
  startE2eIssuer,
  tempDir,
  templatedManifest,
  TOKEN_REQUEST_BIN,
  type E2eIssuer,
} from './fixtures/tenant-cert-issuer.js';

const PROVIDER = 'member-tr';
const CONSUMER = 'hub-tr';
const NAMESPACE = 'tr-fleet';
const SA = 'tr-workload';
const OTHER_SA = 'tr-other';
const VIEW = 'e2e-tr-view';
const SA_USER = `system:serviceaccount:${NAMESPACE}:${SA}`;

let setup: E2eIssuer;
let caBase64: string;
let cacheRoot: string;

interface Status {
  token: string;
  expirationTimestamp: string;
}

function execInfo(config: Record<string, unknown> = {}): string {
  const { controlPlane } = e2eContext();
  return JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: {
      interactive: false,
      cluster: {
        server: controlPlane.server,
        'certificate-authority-data': caBase64,
        config: { ...setup.config, namespace: NAMESPACE, serviceAccount: SA, expirationSeconds: 600, ...config },
      },
    },
  });
}

/** The binary as client-go runs it, bootstrapped from tenant-cert. */
function runBinary(config: Record<string, unknown> = {}, extra: string[] = []) {
  return runNode(
    TOKEN_REQUEST_BIN,
    ['--bootstrap', 'tenant-cert', '--cluster-id', CONSUMER, '--key-file', setup.keyFile, ...extra],
    {
      KUBECACHEDIR: cacheRoot,
      KUBERNETES_EXEC_INFO: execInfo(config),
    },
  );
}

function claims(token: string): {
  iat: number;
  exp: number;
  sub: string;
  jti?: string;
  'kubernetes.io'?: Record<string, unknown>;
} {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
}

async function asToken(name: string, token: string): Promise<string> {
  return tokenKubeconfig(name, token);
}

beforeAll(async () => {
  const { controlPlane } = e2eContext();
  caBase64 = Buffer.from(await readFile(controlPlane.caFile, 'utf8')).toString('base64');
  setup = await startE2eIssuer({
    suffix: 'tr',
    providerClusterID: PROVIDER,
    consumerClusterID: CONSUMER,
    groups: ['fleet-hubs'],
  });
  cacheRoot = await tempDir('kubecache');
  await adminKubectl(['create', 'namespace', NAMESPACE]);
  await applyAsAdmin(
    await templatedManifest('deploy/token-request-rbac.yaml', [
      ['fleet-workload', SA],
      ['fleet', NAMESPACE],
      ['hub-cluster', CONSUMER],
      // The manifest's example binds ClusterRole view; the harness runs kube-controller-manager with only the CSR
      // controllers, so the aggregated `view` has no rules here. A stand-in with view's read rights on pods and
      // configmaps (secrets excluded, as in view).
      ['view', VIEW],
    ]),
  );
  await applyAsAdmin({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: VIEW },
    rules: [{ apiGroups: [''], resources: ['pods', 'configmaps', 'services'], verbs: ['get', 'list', 'watch'] }],
  });
  await adminKubectl(['create', 'serviceaccount', OTHER_SA, '-n', NAMESPACE]);
  await adminKubectl(['create', 'configmap', 'hello', '-n', NAMESPACE, '--from-literal=k=v']);
}, 60_000);

afterAll(async () => {
  await setup?.issuer.stop();
});

describe('token-request bootstrapped from tenant-cert (real kube-apiserver, kube-controller-manager signer)', () => {
  let first: Status;

  it('mints a 600-second token that authenticates as the ServiceAccount, within its RBAC', async () => {
    const result = await runBinary();
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    first = (JSON.parse(result.stdout) as { status: Status }).status;
    const jwt = claims(first.token);
    expect(jwt.exp - jwt.iat).toBe(600);
    expect(jwt.sub).toBe(SA_USER);
    // Printed expiry = 80% into the token's lifetime (renewal point), not the token's own exp.
    const renewIn = Date.parse(first.expirationTimestamp) / 1000 - jwt.iat;
    expect(renewIn).toBeGreaterThan(470);
    expect(renewIn).toBeLessThanOrEqual(481);

    const kubeconfig = await asToken('tr-token-1', first.token);
    const identity = await whoami(kubeconfig);
    expect(identity.username).toBe(SA_USER);
    expect(identity.groups.sort()).toEqual([
      'system:authenticated',
      'system:serviceaccounts',
      `system:serviceaccounts:${NAMESPACE}`,
    ]);
    // The manifest's example binding: (stand-in) view in the namespace. Reading configmaps works; secrets (not in view) and
    // other namespaces are 403.
    const ok = await kubectl(kubeconfig, ['get', 'configmap', 'hello', '-n', NAMESPACE, '-o', 'name']);
    expect(ok.stderr).toBe('');
    expect(ok.stdout.trim()).toBe('configmap/hello');
    const secrets = await kubectl(kubeconfig, ['get', 'secrets', '-n', NAMESPACE]);
    expect(secrets.stderr).toContain(
      `User "${SA_USER}" cannot list resource "secrets" in API group "" in the namespace "${NAMESPACE}"`,
    );
    const elsewhere = await kubectl(kubeconfig, ['get', 'pods', '-n', 'default']);
    expect(elsewhere.stderr).toContain(
      `User "${SA_USER}" cannot list resource "pods" in API group "" in the namespace "default"`,
    );

    // The next run is served from the cache: the same token.
    const again = await runBinary();
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(again.stdout) as { status: Status }).status.token).toBe(first.token);
  });

  it('the bootstrap identity is the tenant-cert consumer and may do nothing but mint tokens for that one ServiceAccount', async () => {
    const { controlPlane } = e2eContext();
    const dir = path.join(cacheRoot, 'clusterprofile', 'tenant-cert');
    const entries = readdirSync(dir).filter((name) => name.endsWith('.json'));
    expect(entries).toHaveLength(1);
    const cached = JSON.parse(await readFile(path.join(dir, entries[0]!), 'utf8')) as {
      status: { clientCertificateData: string; clientKeyData: string };
    };
    const bootstrap = await tempFile(
      'bootstrap.kubeconfig',
      stringify(
        kubeconfigDocument(controlPlane.server, await readFile(controlPlane.caFile, 'utf8'), CONSUMER, {
          cert: cached.status.clientCertificateData,
          key: cached.status.clientKeyData,
        }),
      ),
    );
    const identity = await whoami(bootstrap);
    expect(identity.username).toBe(CONSUMER);
    expect(identity.groups.sort()).toEqual(['fleet-hubs', 'system:authenticated']);
    const pods = await kubectl(bootstrap, ['get', 'pods', '-n', NAMESPACE]);
    expect(pods.stderr).toContain(
      `User "${CONSUMER}" cannot list resource "pods" in API group "" in the namespace "${NAMESPACE}"`,
    );
    const kubectlToken = await kubectl(bootstrap, ['create', 'token', OTHER_SA, '-n', NAMESPACE]);
    expect(kubectlToken.stderr).toContain(`User "${CONSUMER}" cannot create resource "serviceaccounts/token"`);

    // Through the plugin: another ServiceAccount's token is 403 with the clear error, nothing on stdout.
    const other = await runBinary({ serviceAccount: OTHER_SA });
    expect(other.code).toBe(1);
    expect(other.stdout).toBe('');
    expect(other.stderr).toContain('ERR_TOKEN_REQUEST_FORBIDDEN');
    expect(other.stderr).toContain('serviceaccounts/token');
    expect(other.stderr).toContain(OTHER_SA);
    expect(other.stderr).not.toContain('-----BEGIN');
  });

  it('renewal on a controlled clock (in-process runPlugin, real API server): at the renewal point a new token is minted and works', async () => {
    const { controlPlane } = e2eContext();
    const dir = path.join(cacheRoot, 'clusterprofile', 'tenant-cert');
    const entry = readdirSync(dir).find((name) => name.endsWith('.json'))!;
    const cached = JSON.parse(await readFile(path.join(dir, entry), 'utf8')) as {
      status: { clientCertificateData: string; clientKeyData: string };
    };
    const bootstrap = await tempFile(
      'bootstrap.kubeconfig',
      stringify(
        kubeconfigDocument(controlPlane.server, await readFile(controlPlane.caFile, 'utf8'), CONSUMER, {
          cert: cached.status.clientCertificateData,
          key: cached.status.clientKeyData,
        }),
      ),
    );
    const cacheDir = await tempDir('in-process-cache');
    let shiftMs = 0;
    const now = (): Date => new Date(Date.now() + shiftMs);
    const mint = async (): Promise<Status> => {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let out = '';
      let err = '';
      stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
      const code = await runPlugin(tokenRequestProvider, { now })(
        ['--bootstrap', 'kubeconfig', '--bootstrap-kubeconfig', bootstrap, '--cache-dir', cacheDir],
        { KUBERNETES_EXEC_INFO: execInfo() },
        { stdin: Readable.from([]), stdout, stderr },
      );
      expect(err).toBe('');
      expect(code).toBe(0);
      return (JSON.parse(out) as { status: Status }).status;
    };

    const t1 = await mint();
    expect(claims(t1.token).exp - claims(t1.token).iat).toBe(600);
    // Two minutes later on the plugin's clock: still the cached token.
    shiftMs = 120_000;
    expect((await mint()).token).toBe(t1.token);
    // 30 s before the printed renewal point (inside the runtime's 60 s margin): a new token from the API server.
    shiftMs = Date.parse(t1.expirationTimestamp) - 30_000 - Date.now();
    expect(shiftMs).toBeGreaterThan(400_000);
    const t2 = await mint();
    expect(t2.token).not.toBe(t1.token);
    expect(Date.parse(t2.expirationTimestamp)).toBeGreaterThan(now().getTime());
    // The renewed token is accepted by the real API server as the ServiceAccount.
    expect((await whoami(await asToken('tr-token-renewed', t2.token))).username).toBe(SA_USER);
    // And it is then served from the cache, not re-minted on every call.
    expect((await mint()).token).toBe(t2.token);
  });

  it('renewal at real time: a token bound to a Secret dies with it; the re-minted token (binary, tenant-cert bootstrap) works', async () => {
    const anchor = 'tr-anchor';
    await adminKubectl(['create', 'secret', 'generic', anchor, '-n', NAMESPACE, '--from-literal=x=y']);
    const bound = { boundObjectRef: { kind: 'Secret', name: anchor } };
    const firstRun = await runBinary(bound);
    expect(firstRun.stderr).toBe('');
    expect(firstRun.code).toBe(0);
    const t1 = (JSON.parse(firstRun.stdout) as { status: Status }).status;
    expect(t1.token).not.toBe(first.token);
    const binding = claims(t1.token)['kubernetes.io'] as { secret?: { name: string } };
    expect(binding.secret?.name).toBe(anchor);
    const kubeconfig1 = await asToken('tr-bound-1', t1.token);
    expect((await whoami(kubeconfig1)).username).toBe(SA_USER);

    await adminKubectl(['delete', 'secret', anchor, '-n', NAMESPACE, '--wait']);
    // kube-apiserver caches a successful token authentication for 10 s: poll (up to 30 s) until the token is refused.
    let rejected = '';
    const deadline = Date.now() + 30_000;
    while (rejected === '' && Date.now() < deadline) {
      const result = await kubectl(kubeconfig1, ['auth', 'whoami']);
      if (result.code !== 0) rejected = result.stderr;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(rejected).toMatch(/Unauthorized|must be logged in/);

    // The anchor comes back (a new object, new uid); the plugin mints a fresh token bound to it.
    await adminKubectl(['create', 'secret', 'generic', anchor, '-n', NAMESPACE, '--from-literal=x=y']);
    const renewed = await runBinary(bound, ['--force-refresh']);
    expect(renewed.stderr).toBe('');
    expect(renewed.code).toBe(0);
    const t2 = (JSON.parse(renewed.stdout) as { status: Status }).status;
    expect(t2.token).not.toBe(t1.token);
    expect((await whoami(await asToken('tr-bound-2', t2.token))).username).toBe(SA_USER);
    // The old token stays dead: it was bound to the deleted object's uid.
    expect((await kubectl(kubeconfig1, ['auth', 'whoami'])).code).not.toBe(0);
  });
});
