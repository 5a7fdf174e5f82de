/**
 * The hub cluster, seen from the CLI: one operation (read a ClusterProfile). Hub access is found like every other
 * Kubernetes identity of this package (src/kube/kubeconfig-loader.ts: KUBECONFIG merged as kubectl merges it, else
 * ~/.kube/config, else in-cluster); the profile is read by src/kube/cluster-profile.ts (v1alpha1, else v1alpha2).
 * @kubernetes/client-node is not needed for this.
 */
import { CredentialsError, isCredentialsError } from '../base/errors.js';
import type { Env } from '../base/io.js';
import { getClusterProfile, type ClusterProfileObject } from '../kube/cluster-profile.js';
import { KubeClient } from '../kube/kube-client.js';

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
  let client: KubeClient;
  try {
    // A person's hub kubeconfig often authenticates through an exec plugin (EKS, GKE, AKS, OIDC login): run it as
    // kubectl would, with client-go's exec semantics (src/exec, through src/kube/kube-client.ts).
    client = await KubeClient.load(
      { what: "the hub's kubeconfig", allowExec: true },
      { env, cwd },
      { exec: { env, ...(options.stderr === undefined ? {} : { onStderr: (text) => options.stderr!.write(text) }) } },
    );
  } catch (error) {
    throw hubConfigError(error);
  }
  return {
    async getClusterProfile(namespace, name) {
      try {
        // The exec plugin runs here: its errors are its own, not a request's (an exec config that is not one is the hub's).
        await client.authenticate().catch((error: unknown) => {
          throw hubConfigError(error);
        });
        return await getClusterProfile({ send: client.send, server: client.access.endpoint.server }, namespace, name);
      } finally {
        await client.close();
      }
    },
  };
}

/** The loader's errors as the hub's: its messages name the file and line, never its content (it can be a token). */
function hubConfigError(error: unknown): unknown {
  if (!isCredentialsError(error) || !KUBECONFIG_CODES.has(error.code)) return error;
  return new CredentialsError<HubErrorCode>('ERR_HUB_CONFIG', error.message, {
    ...(error.path === undefined ? {} : { path: error.path }),
    hint: error.hint ?? 'point KUBECONFIG at the hub cluster, or pass --profile FILE',
    cause: error,
  });
}
