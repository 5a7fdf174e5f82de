/**
 * The hub cluster, seen from the CLI: one operation (read a ClusterProfile), behind an adapter over
 * @kubernetes/client-node. client-node is a peer dependency loaded with a dynamic import, only when a command needs
 * the hub; its errors (ApiException, network errors) are translated here, in one place.
 */
import { readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { CredentialsError, isCredentialsError } from '../core/errors.js';
import type { Env } from '../core/io.js';
import { statusMessage } from '../kube/status.js';

export const CLUSTERPROFILE_GROUP = 'multicluster.x-k8s.io';
export const CLUSTERPROFILE_VERSION = 'v1alpha1';
export const CLUSTERPROFILE_PLURAL = 'clusterprofiles';

export interface Hub {
  /** The raw ClusterProfile object (JSON as the API server serves it). */
  getClusterProfile(namespace: string, name: string): Promise<unknown>;
}

/**
 * Connects to the hub as kubectl would: the files in `KUBECONFIG` (merged, first wins), else the in-cluster service
 * account when `KUBERNETES_SERVICE_HOST` is set, else `$HOME/.kube/config`.
 */
export async function connectHub(env: Env): Promise<Hub> {
  const k8s = await import('@kubernetes/client-node');
  const kc = new k8s.KubeConfig();
  let source: string;
  try {
    const files = (env.KUBECONFIG ?? '').split(delimiter).filter((file) => file !== '');
    if (files.length > 0) {
      source = files.join(delimiter);
      const [first, ...rest] = files;
      kc.loadFromString(await readKubeconfig(first as string));
      for (const file of rest) {
        const more = new k8s.KubeConfig();
        more.loadFromString(await readKubeconfig(file));
        kc.mergeConfig(more, true);
      }
    } else if (env.KUBERNETES_SERVICE_HOST !== undefined && env.KUBERNETES_SERVICE_HOST !== '') {
      source = 'in-cluster service account';
      kc.loadFromCluster();
    } else if (env.HOME !== undefined && env.HOME !== '') {
      source = join(env.HOME, '.kube', 'config');
      kc.loadFromString(await readKubeconfig(source));
    } else {
      throw new Error('set KUBECONFIG, or run in a pod');
    }
  } catch (cause) {
    if (isCredentialsError(cause)) throw cause;
    // client-node's YAML errors (js-yaml) quote the lines around the mistake, and a kubeconfig line can be a token:
    // keep the reason and the line, not the excerpt (nor the error as cause, which carries it).
    const yaml = yamlProblem(cause);
    throw new CredentialsError('ERR_HUB_CONFIG', `cannot load the hub's kubeconfig: ${yaml ?? message(cause)}`, {
      path: 'KUBECONFIG',
      ...(yaml === undefined ? { cause } : {}),
      hint: 'point KUBECONFIG at the hub cluster, or pass --profile FILE',
    });
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null) {
    throw new CredentialsError('ERR_HUB_CONFIG', `the hub's kubeconfig (${source}) has no current cluster`, {
      path: 'KUBECONFIG',
    });
  }
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  return {
    async getClusterProfile(namespace, name) {
      const url = `${cluster.server}/apis/${CLUSTERPROFILE_GROUP}/${CLUSTERPROFILE_VERSION}/namespaces/${namespace}/${CLUSTERPROFILE_PLURAL}/${name}`;
      try {
        return await api.getNamespacedCustomObject({
          group: CLUSTERPROFILE_GROUP,
          version: CLUSTERPROFILE_VERSION,
          namespace,
          plural: CLUSTERPROFILE_PLURAL,
          name,
        });
      } catch (cause) {
        throw translate(cause, namespace, name, url);
      }
    },
  };
}

async function readKubeconfig(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (cause) {
    throw new CredentialsError('ERR_HUB_CONFIG', `cannot read the hub's kubeconfig ${file}: ${message(cause)}`, {
      path: file,
      cause,
    });
  }
}

/** client-node's ApiException carries `code` (the HTTP status) and `body` (the Status object, parsed or text). */
function translate(cause: unknown, namespace: string, name: string, url: string): CredentialsError {
  const status = (cause as { code?: unknown }).code;
  if (typeof status === 'number') {
    const detail =
      statusMessage((cause as { body?: unknown }).body) ??
      // Without a body client-node keeps its reason only in the message ("HTTP-Code: 401\nMessage: Unauthorized\n...").
      /^Message: (.+)$/m.exec((cause as Error).message ?? '')?.[1]?.trim() ??
      `HTTP ${status}`;
    if (status === 404) {
      return new CredentialsError(
        'ERR_PROFILE_NOT_FOUND',
        `ClusterProfile ${namespace}/${name} not found on the hub: ${detail}`,
        { path: url, cause, hint: 'check --namespace and --name (kubectl get clusterprofiles -A)' },
      );
    }
    return new CredentialsError(
      'ERR_HUB_REQUEST',
      `cannot read ClusterProfile ${namespace}/${name} from the hub (HTTP ${status}): ${detail}`,
      { path: url, cause },
    );
  }
  return new CredentialsError(
    'ERR_HUB_REQUEST',
    `cannot read ClusterProfile ${namespace}/${name} from the hub: ${message(cause)}`,
    { path: url, cause },
  );
}

function yamlProblem(error: unknown): string | undefined {
  const { name, reason, mark } = error as { name?: unknown; reason?: unknown; mark?: { line?: unknown } };
  if (name !== 'YAMLException') return undefined;
  const line = typeof mark?.line === 'number' ? ` at line ${mark.line + 1}` : '';
  return `not YAML: ${typeof reason === 'string' ? reason : 'a syntax error'}${line}`;
}

function message(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
