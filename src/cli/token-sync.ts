/**
 * `clusterprofile token sync`: the push model. A hub-side job mints tokens on every member cluster and keeps them
 * fresh in hub Secrets, so controllers that read those Secrets never hold a member credential of their own. Two
 * layouts, each what one of upstream's reader plugins (cluster-inventory-api `plugins/`) reads:
 * - `secretreader` (default): Secret `<namespace>/<ClusterProfile name>`, key `token` holding the token;
 * - `kubeconfig-secretreader`: Secret `<namespace>/<ClusterProfile name>-kubeconfig`, key `value` holding a kubeconfig
 *   whose current context's user carries the token (`users[].user.token`, what that plugin returns).
 *
 * For each ClusterProfile the providers file selects an exec plugin exactly as the library does; that plugin's
 * credential is the bootstrap identity for TokenRequest on the member; the TokenRequest settings come from the
 * chosen provider's `client.authentication.k8s.io/exec` extension, with flags as defaults. A Secret is rewritten only
 * once its recorded renewal time (80% of the token's lifetime) has passed.
 */
import { stringify } from 'yaml';
import { CredentialsError, formatError, isCredentialsError } from '../base/errors.js';
import { resolveClusterAccess } from '../resolve/cluster-access.js';
import type { AccessConfig, Cluster, ClusterProfile } from '../resolve/types.js';
import { listClusterProfiles } from '../kube/cluster-profile.js';
import { connectionFromCluster } from '../base/cluster-connection.js';
import { isRecord } from '../base/record.js';
import type { KubeCredential, KubeEndpoint, KubeRequest, SendKubeRequest } from '../kube/types.js';
import { statusMessage } from '../kube/status.js';
import {
  buildTokenRequest,
  parseTokenRequestSettings,
  processTokenRequestResponse,
  type TokenRequestSettingsSources,
} from '../providers/token-request/index.js';

/** Annotations on the Secrets the sync writes. */
export const RENEW_AT_ANNOTATION = 'clusterprofile-credentials.x-k8s.io/renew-at';
export const EXPIRES_AT_ANNOTATION = 'clusterprofile-credentials.x-k8s.io/expires-at';
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'clusterprofile-token-sync';

/** The Secret layouts, named after the upstream plugin that reads each. */
export const TOKEN_SYNC_LAYOUTS = ['secretreader', 'kubeconfig-secretreader'] as const;
export type TokenSyncLayout = (typeof TOKEN_SYNC_LAYOUTS)[number];

/** kubeconfig-secretreader layout: the Secret name's suffix and its data key (Cluster API's convention, as in upstream's example). */
export const KUBECONFIG_SECRET_SUFFIX = '-kubeconfig';
export const KUBECONFIG_SECRET_KEY = 'value';

/** The name of the hub Secret that holds the token of ClusterProfile `profileName`. */
export function syncSecretName(layout: TokenSyncLayout, profileName: string): string {
  return layout === 'kubeconfig-secretreader' ? `${profileName}${KUBECONFIG_SECRET_SUFFIX}` : profileName;
}

/**
 * The kubeconfig of the kubeconfig-secretreader layout: one cluster, user and context, all named after the
 * ClusterProfile, the context current. Upstream's plugin reads only the current context's user (its `token`); the
 * cluster (server, CA, TLS server name) makes the same kubeconfig usable as it is, e.g. by kubectl. No extensions:
 * that plugin refuses a kubeconfig that has any.
 *
 * @example
 * syncKubeconfig('spoke-1', { server: 'https://spoke-1:6443' }, 'eyJ…');
 * // 'apiVersion: "v1"\nkind: "Config"\nclusters:\n  - name: "spoke-1"\n    cluster:\n      server: "https://spoke-1:6443"\n…'
 */
export function syncKubeconfig(profileName: string, source: Cluster, token: string): string {
  const cluster: Record<string, unknown> = { server: source.server };
  if (source['certificate-authority-data'] !== undefined)
    cluster['certificate-authority-data'] = source['certificate-authority-data'];
  if (source['tls-server-name'] !== undefined) cluster['tls-server-name'] = source['tls-server-name'];
  const document = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: profileName, cluster }],
    users: [{ name: profileName, user: { token } }],
    contexts: [{ name: profileName, context: { cluster: profileName, user: profileName } }],
    'current-context': profileName,
  };
  // Every string double-quoted, as renderKubeconfig does: client-go reads YAML 1.1.
  return stringify(document, {
    lineWidth: 0,
    aliasDuplicateObjects: false,
    defaultStringType: 'QUOTE_DOUBLE',
    defaultKeyType: 'PLAIN',
  });
}

export interface TokenSyncDependencies {
  /** Requests to the hub API server (ClusterProfiles and Secrets). */
  hub: SendKubeRequest;
  /** The hub's URL, for messages. */
  hubServer: string;
  /** The credential the selected exec plugin gives for a member cluster. */
  bootstrap(access: ReturnType<typeof resolveClusterAccess>): Promise<KubeCredential>;
  /** A transport to one member cluster as one identity. */
  member(endpoint: KubeEndpoint, credential: KubeCredential): { send: SendKubeRequest; close(): Promise<void> };
  now(): Date;
  /** One line per cluster and problem, for the operator. */
  log(line: string): void;
}

export interface TokenSyncOptions {
  namespace: string;
  accessConfig: AccessConfig;
  /** Defaults for the TokenRequest settings (namespace, serviceAccount, audiences, expirationSeconds). */
  defaults: TokenRequestSettingsSources['flags'];
  /** Only these profiles (names); all when empty. */
  names?: readonly string[];
  /** The Secret layout; default `secretreader`. */
  layout?: TokenSyncLayout;
}

export interface ClusterSyncResult {
  cluster: string;
  outcome: 'minted' | 'fresh' | 'failed';
  renewAt?: string;
  error?: string;
}

function hubError(message: string, path: string): CredentialsError {
  return new CredentialsError('ERR_TOKEN_SYNC_HUB', message, { path });
}

const secretPath = (namespace: string, name?: string) =>
  `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;

/** The namespace's ClusterProfiles (src/kube/cluster-profile.ts: v1alpha1, else v1alpha2), by name. */
async function listProfiles(
  deps: TokenSyncDependencies,
  namespace: string,
): Promise<{ name: string; profile?: ClusterProfile; error?: CredentialsError }[]> {
  let listed: Awaited<ReturnType<typeof listClusterProfiles>>;
  try {
    listed = await listClusterProfiles({ send: deps.hub, server: deps.hubServer }, namespace);
  } catch (error) {
    if (!isCredentialsError(error) || error.code !== 'ERR_HUB_REQUEST') throw error;
    throw new CredentialsError('ERR_TOKEN_SYNC_HUB', error.message, {
      ...(error.path === undefined ? {} : { path: error.path }),
      cause: error,
    });
  }
  return listed
    .map((item) =>
      item.profile === undefined ? item : { name: item.name, profile: item.profile as unknown as ClusterProfile },
    )
    .sort((a, b) => a.name.localeCompare(b.name));
}

function renewAtOf(secret: unknown): Date | undefined {
  const value = (secret as { metadata?: { annotations?: Record<string, string> } }).metadata?.annotations?.[
    RENEW_AT_ANNOTATION
  ];
  const date = value === undefined ? undefined : new Date(value);
  return date === undefined || Number.isNaN(date.getTime()) ? undefined : date;
}

async function writeSecret(
  hub: SendKubeRequest,
  namespace: string,
  name: string,
  exists: boolean,
  data: { content: Record<string, string>; renewAt: Date; expiresAt: Date },
): Promise<void> {
  const body = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: {
        [RENEW_AT_ANNOTATION]: data.renewAt.toISOString(),
        [EXPIRES_AT_ANNOTATION]: data.expiresAt.toISOString(),
      },
    },
    data: Object.fromEntries(
      Object.entries(data.content).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
    ),
  };
  const request: KubeRequest = exists
    ? { method: 'PUT', path: secretPath(namespace, name), body }
    : { method: 'POST', path: secretPath(namespace), body };
  const response = await hub(request);
  if (response.status !== 200 && response.status !== 201) {
    throw hubError(
      `cannot write Secret ${namespace}/${name}: ${statusMessage(response.body) ?? `HTTP ${response.status}`}`,
      secretPath(namespace, name),
    );
  }
}

async function syncOne(
  profile: ClusterProfile,
  options: TokenSyncOptions,
  deps: TokenSyncDependencies,
): Promise<ClusterSyncResult> {
  const name = profile.metadata.name;
  const layout = options.layout ?? 'secretreader';
  const secretName = syncSecretName(layout, name);
  const existing = await deps.hub({ method: 'GET', path: secretPath(options.namespace, secretName) });
  if (existing.status !== 200 && existing.status !== 404) {
    throw hubError(
      `cannot read Secret ${options.namespace}/${secretName}: ${statusMessage(existing.body) ?? `HTTP ${existing.status}`}`,
      secretPath(options.namespace, secretName),
    );
  }
  const renewAt = existing.status === 200 ? renewAtOf(existing.body) : undefined;
  if (renewAt !== undefined && renewAt.getTime() > deps.now().getTime()) {
    return { cluster: name, outcome: 'fresh', renewAt: renewAt.toISOString() };
  }
  const access = resolveClusterAccess(profile, options.accessConfig);
  const config = access.cluster.config;
  const settings = parseTokenRequestSettings({
    config: isRecord(config) ? config : undefined,
    flags: options.defaults,
  });
  const credential = await deps.bootstrap(access);
  const member = deps.member(connectionFromCluster(access.cluster), credential);
  try {
    const sentAt = deps.now();
    const response = await member.send(buildTokenRequest(settings));
    const minted = processTokenRequestResponse(response, settings, { server: access.cluster.server, now: sentAt });
    const content: Record<string, string> =
      layout === 'kubeconfig-secretreader'
        ? { [KUBECONFIG_SECRET_KEY]: syncKubeconfig(name, access.cluster, minted.token) }
        : { token: minted.token };
    await writeSecret(deps.hub, options.namespace, secretName, existing.status === 200, {
      content,
      renewAt: minted.renewAt,
      expiresAt: minted.expiresAt,
    });
    return { cluster: name, outcome: 'minted', renewAt: minted.renewAt.toISOString() };
  } finally {
    await member.close();
  }
}

/**
 * One pass over the namespace's ClusterProfiles. A failing cluster is reported and the others go on; the hub
 * list itself failing throws.
 */
export async function syncTokensOnce(
  options: TokenSyncOptions,
  deps: TokenSyncDependencies,
): Promise<ClusterSyncResult[]> {
  const listed = (await listProfiles(deps, options.namespace)).filter(
    (item) => options.names === undefined || options.names.length === 0 || options.names.includes(item.name),
  );
  const results: ClusterSyncResult[] = [];
  for (const item of listed) {
    try {
      if (item.profile === undefined) throw item.error;
      const result = await syncOne(item.profile, options, deps);
      deps.log(
        `${result.cluster}: ${result.outcome === 'fresh' ? 'still fresh' : 'token minted'}, renew at ${result.renewAt}`,
      );
      results.push(result);
    } catch (error) {
      const message = formatError(error);
      deps.log(`${item.name}: failed: ${message}`);
      results.push({ cluster: item.name, outcome: 'failed', error: message });
    }
  }
  return results;
}
