/**
 * The token-request provider's settings: which service account's token to mint on the member cluster, for whom and
 * for how long. Cluster-specific values come from `spec.cluster.config` (the ClusterProfile's
 * `client.authentication.k8s.io/exec` extension); flags give controller-wide defaults for the same keys.
 *
 * @see https://kubernetes.io/docs/reference/kubernetes-api/authentication-resources/token-request-v1/
 */
import { CredentialsError, quote } from '../../base/errors.js';
import type { ExecCluster } from '../../base/exec-credential.js';

/** Bounds of `spec.expirationSeconds` as kube-apiserver validates them. */
export const MIN_EXPIRATION_SECONDS = 600;
export const MAX_EXPIRATION_SECONDS = 2 ** 32;
export const DEFAULT_EXPIRATION_SECONDS = 3600;

export type BoundObjectKind = 'Pod' | 'Secret' | 'Node';

export interface BoundObjectReference {
  kind: BoundObjectKind;
  apiVersion: 'v1';
  name: string;
  uid?: string;
}

export interface TokenRequestSettings {
  namespace: string;
  serviceAccount: string;
  /** Empty: the API server's own audiences. */
  audiences: string[];
  expirationSeconds: number;
  boundObjectRef?: BoundObjectReference;
}

/** The same keys as flags (`--namespace`, …) and in `spec.cluster.config`; config wins key by key. */
export interface TokenRequestSettingsSources {
  config: Record<string, unknown> | undefined;
  flags: {
    namespace?: string | undefined;
    serviceAccount?: string | undefined;
    audiences?: readonly string[] | undefined;
    expirationSeconds?: string | undefined;
  };
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function invalid(message: string, path: string): CredentialsError {
  return new CredentialsError('ERR_TOKEN_REQUEST_SETTINGS', message, { path });
}

function where(key: string, fromConfig: boolean, flag: string): string {
  return fromConfig ? `spec.cluster.config.${key}` : flag;
}

/** A DNS-1123 label (namespaces): at most 63 characters. */
export function checkDns1123Label(value: string, path: string, what: string): string {
  if (value.length > 63 || !DNS1123_LABEL.test(value)) {
    throw invalid(
      `${what} ${quote(value)} is not a valid DNS-1123 label: at most 63 lowercase alphanumeric characters or '-', starting and ending with an alphanumeric character`,
      path,
    );
  }
  return value;
}

/** A DNS-1123 subdomain (service account and most object names): at most 253 characters. */
export function checkDns1123Subdomain(value: string, path: string, what: string): string {
  if (value.length > 253 || !DNS1123_SUBDOMAIN.test(value)) {
    throw invalid(
      `${what} ${quote(value)} is not a valid DNS-1123 subdomain: at most 253 lowercase alphanumeric characters, '-' or '.', starting and ending with an alphanumeric character`,
      path,
    );
  }
  return value;
}

function pick(
  sources: TokenRequestSettingsSources,
  key: 'namespace' | 'serviceAccount' | 'audiences' | 'expirationSeconds',
): { value: unknown; fromConfig: boolean } {
  const fromConfig = sources.config?.[key];
  if (fromConfig !== undefined) {
    return { value: fromConfig, fromConfig: true };
  }
  return { value: sources.flags[key], fromConfig: false };
}

function requiredName(
  sources: TokenRequestSettingsSources,
  key: 'namespace' | 'serviceAccount',
  flag: string,
): { value: string; path: string } {
  const { value, fromConfig } = pick(sources, key);
  const path = where(key, fromConfig, flag);
  if (value === undefined || value === '') {
    throw invalid(
      `missing ${key}: set spec.cluster.config.${key} in the ClusterProfile's exec extension or ${flag}`,
      path,
    );
  }
  if (typeof value !== 'string') {
    throw invalid(`${key} must be a string`, path);
  }
  return { value, path };
}

function parseExpiration(sources: TokenRequestSettingsSources): number {
  const { value, fromConfig } = pick(sources, 'expirationSeconds');
  const path = where('expirationSeconds', fromConfig, '--expiration-seconds');
  if (value === undefined) {
    return DEFAULT_EXPIRATION_SECONDS;
  }
  const seconds = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof seconds !== 'number' || !Number.isSafeInteger(seconds)) {
    throw invalid(`expirationSeconds must be a whole number of seconds, got ${quote(value)}`, path);
  }
  if (seconds < MIN_EXPIRATION_SECONDS) {
    throw invalid(
      `expirationSeconds may not specify a duration less than 10 minutes (${MIN_EXPIRATION_SECONDS} s), got ${seconds}`,
      path,
    );
  }
  if (seconds > MAX_EXPIRATION_SECONDS) {
    throw invalid(`expirationSeconds may not specify a duration larger than 2^32 seconds, got ${seconds}`, path);
  }
  return seconds;
}

function parseAudiences(sources: TokenRequestSettingsSources): string[] {
  const { value, fromConfig } = pick(sources, 'audiences');
  const path = where('audiences', fromConfig, '--audience');
  if (value === undefined) {
    return [];
  }
  if (!Array.isArray(value) || value.some((audience) => typeof audience !== 'string' || audience === '')) {
    throw invalid('audiences must be a list of non-empty strings', path);
  }
  return [...new Set(value as string[])];
}

function parseBoundObject(config: Record<string, unknown> | undefined): BoundObjectReference | undefined {
  const raw = config?.['boundObjectRef'];
  if (raw === undefined) {
    return undefined;
  }
  const path = 'spec.cluster.config.boundObjectRef';
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw invalid('boundObjectRef must be an object {kind, name, uid?}', path);
  }
  const { kind, name, uid, apiVersion } = raw as Record<string, unknown>;
  if (kind !== 'Pod' && kind !== 'Secret' && kind !== 'Node') {
    throw invalid(`boundObjectRef.kind must be Pod, Secret or Node, got ${quote(kind)}`, `${path}.kind`);
  }
  if (apiVersion !== undefined && apiVersion !== 'v1') {
    throw invalid(`boundObjectRef.apiVersion must be v1, got ${quote(apiVersion)}`, `${path}.apiVersion`);
  }
  if (typeof name !== 'string') {
    throw invalid('boundObjectRef.name is required', `${path}.name`);
  }
  checkDns1123Subdomain(name, `${path}.name`, 'boundObjectRef.name');
  if (uid !== undefined && (typeof uid !== 'string' || uid === '')) {
    throw invalid('boundObjectRef.uid must be a non-empty string', `${path}.uid`);
  }
  return { kind, apiVersion: 'v1', name, ...(uid === undefined ? {} : { uid: uid as string }) };
}

/** Validates and merges the sources; throws `ERR_TOKEN_REQUEST_SETTINGS` naming the key or flag at fault. */
export function parseTokenRequestSettings(sources: TokenRequestSettingsSources): TokenRequestSettings {
  const namespace = requiredName(sources, 'namespace', '--namespace');
  checkDns1123Label(namespace.value, namespace.path, 'namespace');
  const serviceAccount = requiredName(sources, 'serviceAccount', '--service-account');
  checkDns1123Subdomain(serviceAccount.value, serviceAccount.path, 'serviceAccount');
  const boundObjectRef = parseBoundObject(sources.config);
  return {
    namespace: namespace.value,
    serviceAccount: serviceAccount.value,
    audiences: parseAudiences(sources),
    expirationSeconds: parseExpiration(sources),
    ...(boundObjectRef === undefined ? {} : { boundObjectRef }),
  };
}

/**
 * Where the identity that may create TokenRequests comes from. `kubeconfig`: `file` alone when given, else the order
 * of src/kube/kubeconfig-loader.ts (KUBECONFIG, ~/.kube/config, in-cluster); `in-cluster`: the pod's service account only.
 */
export type Bootstrap =
  | { kind: 'kubeconfig'; file?: string }
  | { kind: 'in-cluster' }
  /** `identityDir`: `--identity-dir`, where imported Identities are looked for (tenant-cert's own default otherwise). */
  | { kind: 'tenant-cert'; clusterId: string; keyFile: string; identityDir?: string };

/** `timeoutMs`: deadline of the API server exchange (`--timeout`), connect and TLS and retries included. */
export type TokenRequestProviderSettings =
  | {
      mode: 'token-request';
      cluster: ExecCluster;
      request: TokenRequestSettings;
      bootstrap: Bootstrap;
      timeoutMs: number;
    }
  /** `hubKubeconfig`: `--hub-kubeconfig`; undefined: the order of src/kube/kubeconfig-loader.ts. */
  | {
      mode: 'secret-reader';
      config: unknown;
      hubKubeconfig: string | undefined;
      secretNamespace: string | undefined;
      /** `--managed-serviceaccount`: read Open Cluster Management's Secret `<clusterName>-<msa>`. */
      managedServiceAccount: string | undefined;
      timeoutMs: number;
    };
