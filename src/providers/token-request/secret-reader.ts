/**
 * Secret Reader mode, as KEP-4322/5339's reference plugin defines it: the token for cluster `clusterName` is read
 * from the hub Secret `<namespace>/<clusterName>`, key `token`. Upstream's error texts are kept so that operators'
 * runbooks keep matching; each error also carries a stable code.
 */
import { CredentialsError } from '../../base/errors.js';
import { checkDns1123Label, checkDns1123Subdomain } from './settings.js';
import type { KubeRequest, KubeResponse } from '../../kube/types.js';
import { statusMessage } from '../../kube/status.js';

export interface SecretReaderSettings {
  namespace: string;
  clusterName: string;
}

/** `spec.cluster.config` must hold `clusterName`; the namespace comes from a flag or the in-cluster namespace. */
export function parseSecretReaderSettings(config: unknown, namespace: string): SecretReaderSettings {
  if (config === undefined || config === null) {
    throw new CredentialsError('ERR_SECRET_READER_CONFIG', 'missing ExecCredential.Spec.Cluster.Config', {
      path: 'spec.cluster.config',
      hint: 'set provideClusterInfo: true in the exec config and a client.authentication.k8s.io/exec extension with clusterName on the cluster',
    });
  }
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new CredentialsError(
      'ERR_SECRET_READER_CONFIG',
      `invalid ExecCredential.Spec.Cluster.Config: expected an object, got ${JSON.stringify(config)}`,
      {
        path: 'spec.cluster.config',
      },
    );
  }
  const clusterName = (config as Record<string, unknown>)['clusterName'];
  if (clusterName === undefined || clusterName === '') {
    throw new CredentialsError(
      'ERR_SECRET_READER_CONFIG',
      'missing clusterName in ExecCredential.Spec.Cluster.Config',
      {
        path: 'spec.cluster.config.clusterName',
      },
    );
  }
  if (typeof clusterName !== 'string') {
    throw new CredentialsError(
      'ERR_SECRET_READER_CONFIG',
      'invalid ExecCredential.Spec.Cluster.Config: clusterName must be a string',
      {
        path: 'spec.cluster.config.clusterName',
      },
    );
  }
  try {
    checkDns1123Subdomain(clusterName, 'spec.cluster.config.clusterName', 'clusterName');
    checkDns1123Label(namespace, '--secret-namespace', 'namespace');
  } catch (error) {
    const { message, path } = error as CredentialsError;
    throw new CredentialsError('ERR_SECRET_READER_CONFIG', `invalid ExecCredential.Spec.Cluster.Config: ${message}`, {
      ...(path === undefined ? {} : { path }),
    });
  }
  return { namespace, clusterName };
}

export function buildSecretRequest(settings: SecretReaderSettings): KubeRequest {
  return {
    method: 'GET',
    path: `/api/v1/namespaces/${encodeURIComponent(settings.namespace)}/secrets/${encodeURIComponent(settings.clusterName)}`,
  };
}

/** The token from the Secret's `data.token` (base64), or an error in upstream's words. */
export function processSecretResponse(response: KubeResponse, settings: SecretReaderSettings): string {
  const name = `${settings.namespace}/${settings.clusterName}`;
  if (response.status !== 200) {
    const reason =
      statusMessage(response.body) ??
      (response.status === 403
        ? `forbidden: the hub identity needs "get" on "secrets" in namespace "${settings.namespace}"`
        : `HTTP ${response.status}`);
    throw new CredentialsError('ERR_SECRET_READER_GET', `failed to get secret ${name}: ${reason}`, {
      path: `secret ${name}`,
      ...(response.status === 403
        ? { hint: `grant a Role with verbs ["get"] on resource "secrets" in namespace "${settings.namespace}"` }
        : {}),
    });
  }
  const data = (response.body as { data?: unknown } | null)?.data;
  const encoded = typeof data === 'object' && data !== null ? (data as Record<string, unknown>)['token'] : undefined;
  const token = typeof encoded === 'string' ? Buffer.from(encoded, 'base64').toString('utf8').trim() : '';
  if (token === '') {
    throw new CredentialsError('ERR_SECRET_READER_NO_TOKEN', `secret ${name} missing "token" key`, {
      path: `secret ${name}`,
    });
  }
  return token;
}
