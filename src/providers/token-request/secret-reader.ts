/**
 * Secret Reader mode, as KEP-4322/5339's reference plugin defines it: the token for cluster `clusterName` is read
 * from the hub Secret `<namespace>/<clusterName>`, key `token`. Upstream's error texts are kept so that operators'
 * runbooks keep matching; each error also carries a stable code.
 *
 * With `--managed-serviceaccount <msa>` the Secret is `<namespace>/<clusterName>-<msa>`: the layout Open Cluster
 * Management's managed-serviceaccount addon writes (pkg/addon/manager/controller/clusterprofile_cred_syncer.go) and
 * its cp-creds plugin reads, so one providers-file entry can swap cp-creds for this plugin with the same argument.
 */
import { CredentialsError } from '../../base/errors.js';
import { checkDns1123Label, checkDns1123Subdomain } from './settings.js';
import type { KubeRequest, KubeResponse } from '../../kube/types.js';
import { statusMessage } from '../../kube/status.js';

export interface SecretReaderSettings {
  namespace: string;
  clusterName: string;
  /** The Secret's name: `clusterName`, or `<clusterName>-<msa>` with `--managed-serviceaccount`. */
  secretName: string;
}

/** A bearer token as RFC 6750 section 2.1 allows it (b64token): anything else would be refused by the member. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * `spec.cluster.config` must hold `clusterName`; the namespace comes from a flag or the in-cluster namespace;
 * `managedServiceAccount` (`--managed-serviceaccount`) selects Open Cluster Management's Secret name.
 */
export function parseSecretReaderSettings(
  config: unknown,
  namespace: string,
  managedServiceAccount?: string,
): SecretReaderSettings {
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
  const secretName = managedServiceAccount === undefined ? clusterName : `${clusterName}-${managedServiceAccount}`;
  try {
    checkDns1123Subdomain(clusterName, 'spec.cluster.config.clusterName', 'clusterName');
    checkDns1123Label(namespace, '--secret-namespace', 'namespace');
    if (managedServiceAccount !== undefined) {
      checkDns1123Subdomain(managedServiceAccount, '--managed-serviceaccount', 'managed-serviceaccount');
      checkDns1123Subdomain(secretName, 'spec.cluster.config.clusterName', 'Secret name');
    }
  } catch (error) {
    const { message, path } = error as CredentialsError;
    throw new CredentialsError('ERR_SECRET_READER_CONFIG', `invalid ExecCredential.Spec.Cluster.Config: ${message}`, {
      ...(path === undefined ? {} : { path }),
    });
  }
  return { namespace, clusterName, secretName };
}

export function buildSecretRequest(settings: SecretReaderSettings): KubeRequest {
  return {
    method: 'GET',
    path: `/api/v1/namespaces/${encodeURIComponent(settings.namespace)}/secrets/${encodeURIComponent(settings.secretName)}`,
  };
}

/** The token from the Secret's `data.token` (base64), or an error in upstream's words. */
export function processSecretResponse(response: KubeResponse, settings: SecretReaderSettings): string {
  const name = `${settings.namespace}/${settings.secretName}`;
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
  if (!BEARER_TOKEN.test(token)) {
    // The value is never quoted: it may be a credential of another kind stored under the wrong key.
    throw new CredentialsError(
      'ERR_SECRET_READER_NOT_A_TOKEN',
      `secret ${name} key "token" is not a bearer token (${token.length} characters, not all of A-Z a-z 0-9 -._~+/ and trailing =)`,
      { path: `secret ${name} data.token` },
    );
  }
  return token;
}
