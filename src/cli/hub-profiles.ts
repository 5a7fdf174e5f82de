/**
 * The hub cluster, seen from the CLI: one operation (read a ClusterProfile). Hub access is found like every other
 * Kubernetes identity of this package (src/kube/kubeconfig-loader.ts: KUBECONFIG merged as kubectl merges it, else
 * ~/.kube/config, else in-cluster); the profile is read by src/kube/cluster-profile.ts (v1alpha1, else v1alpha2).
 * @kubernetes/client-node is not needed for this.
 */
import { CredentialsError, isCredentialsError } from '../core/errors.js';
import type { Env } from '../core/io.js';
import { getClusterProfile, type ClusterProfileObject } from '../kube/cluster-profile.js';
import { loadKubeAccess, type KubeAccess } from '../kube/kubeconfig-loader.js';
import { createKubeTransport } from '../kube/transport.js';
import type { KubeCredential } from '../kube/types.js';
import type { ExecConfig } from '../resolve/types.js';
import { assertDocument } from '../schemas/index.js';

export type HubErrorCode = 'ERR_HUB_CONFIG' | 'ERR_HUB_REQUEST' | 'ERR_PROFILE_NOT_FOUND';

export interface Hub {
  /** The ClusterProfile, checked against its schema. */
  getClusterProfile(namespace: string, name: string): Promise<ClusterProfileObject>;
}

const KUBECONFIG_CODES = new Set(['ERR_KUBECONFIG_READ', 'ERR_KUBECONFIG_INVALID', 'ERR_IN_CLUSTER_UNAVAILABLE']);

/** The hub identity: KUBECONFIG (merged), else the in-cluster service account, else `$HOME/.kube/config`. */
export async function connectHub(
  env: Env,
  cwd: string,
  options: { stderr?: NodeJS.WritableStream } = {},
): Promise<Hub> {
  let access: KubeAccess;
  try {
    // A person's hub kubeconfig often authenticates through an exec plugin (EKS, GKE, AKS, OIDC login): run it as
    // kubectl would, with client-go's exec semantics (src/exec).
    access = await loadKubeAccess({ what: "the hub's kubeconfig", allowExec: true }, { env, cwd });
  } catch (error) {
    if (!isCredentialsError(error) || !KUBECONFIG_CODES.has(error.code)) throw error;
    // The loader's messages name the file and line, never its content (a kubeconfig line can be a token).
    throw new CredentialsError<HubErrorCode>('ERR_HUB_CONFIG', error.message, {
      ...(error.path === undefined ? {} : { path: error.path }),
      hint: error.hint ?? 'point KUBECONFIG at the hub cluster, or pass --profile FILE',
      cause: error,
    });
  }
  return {
    async getClusterProfile(namespace, name) {
      const credential =
        access.exec === undefined ? access.credential : await execCredential(access, env, options.stderr);
      const transport = createKubeTransport(access.endpoint, credential);
      try {
        return await getClusterProfile({ send: transport.send, server: access.endpoint.server }, namespace, name);
      } finally {
        await transport.close();
      }
    },
  };
}

/** Runs the hub user's exec plugin once (a CLI call makes one request) and turns its answer into a credential. */
async function execCredential(
  access: KubeAccess,
  env: Env,
  stderr: NodeJS.WritableStream | undefined,
): Promise<KubeCredential> {
  const exec = assertDocument<ExecConfig>('exec-config', access.exec!.config, {
    code: 'ERR_HUB_CONFIG',
    what: `the hub user's exec (${access.exec!.path})`,
  });
  const { runExecPlugin } = await import('../exec/runner.js');
  const { endpoint } = access;
  const cluster =
    exec.provideClusterInfo === true
      ? {
          server: endpoint.server,
          ...(endpoint.caPem === undefined
            ? {}
            : { 'certificate-authority-data': Buffer.from(endpoint.caPem).toString('base64') }),
          ...(endpoint.tlsServerName === undefined ? {} : { 'tls-server-name': endpoint.tlsServerName }),
          ...(endpoint.insecureSkipTlsVerify === true ? { 'insecure-skip-tls-verify': true } : {}),
          ...(endpoint.proxyUrl === undefined ? {} : { 'proxy-url': endpoint.proxyUrl }),
        }
      : undefined;
  const result = await runExecPlugin(exec, cluster, {
    env,
    ...(stderr === undefined ? {} : { onStderr: (text) => stderr.write(text) }),
  });
  return result.clientCertificate !== undefined && result.clientKey !== undefined
    ? { kind: 'certificate', certificatePem: result.clientCertificate, keyPem: result.clientKey }
    : { kind: 'token', token: result.token! };
}
