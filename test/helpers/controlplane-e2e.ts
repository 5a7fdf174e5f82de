/**
 * What e2e test files get from the global setup (test/e2e/global-setup.ts), and small helpers on top of it.
 * The control plane runs once per `vitest --project e2e`; test files read its facts with {@link e2eContext} and drive
 * it with real clients (kubectl, the Go reference client, our built binaries).
 *
 * Hooks for scenarios: a test that needs an identity issues a client certificate from the client CA
 * ({@link clientCertKubeconfig}), grants it rights as admin ({@link kubectl} with `adminKubeconfig`), and checks what
 * the API server sees ({@link whoami}). OIDC scenarios use `oidc` (the test OpenID Provider that kube-apiserver's
 * AuthenticationConfiguration trusts) and `dex` (Dex, trusted as a second issuer).
 *
 * @example
 * const { controlPlane } = e2eContext();
 * const alice = await clientCertKubeconfig('alice', ['devs']);
 * expect((await whoami(alice)).username).toBe('alice');
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { JWK } from 'jose';
import { inject } from 'vitest';
import { stringify } from 'yaml';
import { loadCa } from './controlplane-pki.js';
import { clientCertKubeconfig as kubeconfigDocument, type ControlPlaneInfo } from './controlplane.js';

// Test files import it from here, with the rest of the e2e context.
export { clusterProfileDocument } from './controlplane.js';
import type { DexInfo } from './dex.js';

/** The test OpenID Provider as kube-apiserver trusts it (serializable part of oidc-op's TestOpenIdProvider). */
export interface E2eOidcInfo {
  issuer: string;
  caPem: string;
  /** The audience kube-apiserver accepts; the OP issues JWT access tokens for it. */
  audience: string;
  /** Client ids and secrets, as `TestOpenIdProvider.clients`. */
  clients: Record<string, Record<string, string>>;
  /** What the API server prefixes to `sub` and `groups`. */
  usernamePrefix: string;
  groupsPrefix: string;
  /** The OP's subject-token signing key (private JWK): `signSubjectTokenWith(key, claims)` makes token-exchange input. */
  subjectTokenKey: JWK;
}

/** Dex as kube-apiserver trusts it: a second jwt issuer of the AuthenticationConfiguration (see test/helpers/dex.ts). */
export interface E2eDexInfo extends DexInfo {
  /** The audience kube-apiserver accepts: the peer client whose trustedPeers lists Dex's other clients. */
  audience: string;
  usernamePrefix: string;
  groupsPrefix: string;
}

export interface E2eBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  /** test/e2e/dex: Dex's server package (test/helpers/dex.ts starts it). */
  dex: string;
  /** test/e2e/goclient: lists namespaces through cluster-inventory-api pkg/access. */
  goclient: string;
  /** test/e2e/differential: cluster-inventory-api and client-go's exec decoding, as a JSON-lines driver. */
  differential: string;
  /** test/e2e/kubeconfig-differential: client-go's clientcmd loading rules, as a JSON-lines driver. */
  kubeconfigDifferential: string;
  /** Upstream's plugins/secretreader and plugins/kubeconfig-secretreader (test/e2e/upstream-plugins), unchanged. */
  secretreaderPlugin: string;
  kubeconfigSecretreaderPlugin: string;
  /** test/e2e/liqo: Liqo v1.2.0's consumer-side handshake functions and kubeconfig forging, as a JSON driver. */
  liqo: string;
  /** Open Cluster Management, unchanged (test/e2e/ocm, test/e2e/cluster-proxy, test/e2e/managed-serviceaccount). */
  ocmRegistration: string;
  clusterProxyAddonManager: string;
  managedServiceAccount: string;
  cpCredsPlugin: string;
  versions: Record<string, string>;
}

declare module 'vitest' {
  export interface ProvidedContext {
    controlPlane: ControlPlaneInfo;
    oidc: E2eOidcInfo;
    dex: E2eDexInfo;
    binaries: E2eBinaries;
  }
}

export function e2eContext(): {
  controlPlane: ControlPlaneInfo;
  oidc: E2eOidcInfo;
  dex: E2eDexInfo;
  binaries: E2eBinaries;
} {
  return {
    controlPlane: inject('controlPlane'),
    oidc: inject('oidc'),
    dex: inject('dex'),
    binaries: inject('binaries'),
  };
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command, never rejecting on a non-zero exit: tests assert on code, stdout and stderr. */
export function exec(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = execFile(
      command,
      args,
      { env: options.env ?? process.env, timeout: options.timeoutMs ?? 60_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** `kubectl --kubeconfig <kubeconfig> ...args` (kubectl from PATH). */
export function kubectl(kubeconfig: string, args: string[], options: { input?: string } = {}): Promise<ExecResult> {
  return exec('kubectl', ['--kubeconfig', kubeconfig, ...args], options);
}

/** `kubectl apply -f -` as admin; throws with kubectl's stderr on failure. */
export async function applyAsAdmin(manifest: unknown): Promise<void> {
  const { controlPlane } = e2eContext();
  const text = typeof manifest === 'string' ? manifest : JSON.stringify(manifest);
  const result = await kubectl(controlPlane.adminKubeconfig, ['apply', '-f', '-'], { input: text });
  if (result.code !== 0) throw new Error(`kubectl apply failed: ${result.stderr}`);
}

/** The identity the API server sees (SelfSubjectReview through `kubectl auth whoami -o json`). */
export async function whoami(
  kubeconfig: string,
): Promise<{ username: string; groups: string[]; extra?: Record<string, string[]> }> {
  const result = await kubectl(kubeconfig, ['auth', 'whoami', '-o', 'json']);
  if (result.code !== 0) throw new Error(`kubectl auth whoami failed (${result.code}): ${result.stderr}`);
  const review = JSON.parse(result.stdout) as {
    status: { userInfo: { username: string; groups?: string[]; extra?: Record<string, string[]> } };
  };
  const info = review.status.userInfo;
  return {
    username: info.username,
    groups: info.groups ?? [],
    ...(info.extra === undefined ? {} : { extra: info.extra }),
  };
}

/** A file in a fresh directory inside the control plane's work dir, so the global teardown removes it (keys too). */
export async function tempFile(name: string, content: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const parent = path.join(controlPlane.workDir, 'files');
  await mkdir(parent, { recursive: true });
  const dir = await mkdtemp(path.join(parent, 'f-'));
  const file = path.join(dir, name);
  await writeFile(file, content, { mode: 0o600 });
  return file;
}

/** A client certificate from the control plane's client CA (CN = user, O = groups). */
export async function issueClientCert(
  user: string,
  groups: string[] = [],
  options: { notAfter?: Date } = {},
): Promise<{ cert: string; key: string }> {
  const { controlPlane } = e2eContext();
  const ca = await loadCa({
    cert: await readFile(controlPlane.clientCaCertFile, 'utf8'),
    key: await readFile(controlPlane.clientCaKeyFile, 'utf8'),
  });
  return ca.issueClientCert(user, { groups, ...options });
}

/** A kubeconfig file for `user` authenticating with a fresh client certificate from the client CA. */
export async function clientCertKubeconfig(user: string, groups: string[] = []): Promise<string> {
  const { controlPlane } = e2eContext();
  const pair = await issueClientCert(user, groups);
  const caPem = await readFile(controlPlane.caFile, 'utf8');
  return tempFile(`${user}.kubeconfig`, stringify(kubeconfigDocument(controlPlane.server, caPem, user, pair)));
}

/** A kubeconfig file for a bearer token (OIDC, service-account) against the control plane. */
export async function tokenKubeconfig(name: string, token: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const caPem = await readFile(controlPlane.caFile, 'utf8');
  return tempFile(
    `${name}.kubeconfig`,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'e2e',
          cluster: { server: controlPlane.server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
        },
      ],
      users: [{ name, user: { token } }],
      contexts: [{ name: 'e2e', context: { cluster: 'e2e', user: name } }],
      'current-context': 'e2e',
    }),
  );
}
