/**
 * The hub cluster, seen from the CLI: one operation (read a ClusterProfile). Hub access is found like every other
 * Kubernetes identity of this package (src/kube/kubeconfig.ts: KUBECONFIG merged as kubectl merges it, else
 * ~/.kube/config, else in-cluster); the profile is read by src/kube/cluster-profile.ts (v1alpha1, else v1alpha2).
 * @kubernetes/client-node is not needed for this.
 */
import { CredentialsError, isCredentialsError } from '../core/errors.js';
import type { Env } from '../core/io.js';
import { getClusterProfile, type ClusterProfileObject } from '../kube/cluster-profile.js';
import { loadKubeAccess, type KubeAccess } from '../kube/kubeconfig.js';
import { createKubeTransport } from '../kube/transport.js';

export type HubErrorCode = 'ERR_HUB_CONFIG' | 'ERR_HUB_REQUEST' | 'ERR_PROFILE_NOT_FOUND';

export interface Hub {
  /** The ClusterProfile, checked against its schema. */
  getClusterProfile(namespace: string, name: string): Promise<ClusterProfileObject>;
}

const KUBECONFIG_CODES = new Set(['ERR_KUBECONFIG_READ', 'ERR_KUBECONFIG_INVALID', 'ERR_IN_CLUSTER_UNAVAILABLE']);

/** The hub identity: KUBECONFIG (merged), else the in-cluster service account, else `$HOME/.kube/config`. */
export async function connectHub(env: Env, cwd: string): Promise<Hub> {
  let access: KubeAccess;
  try {
    access = await loadKubeAccess({ what: "the hub's kubeconfig" }, { env, cwd });
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
      const transport = createKubeTransport(access.endpoint, access.credential);
      try {
        return await getClusterProfile({ send: transport.send, server: access.endpoint.server }, namespace, name);
      } finally {
        await transport.close();
      }
    },
  };
}
