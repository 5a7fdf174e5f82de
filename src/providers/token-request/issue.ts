/**
 * The cache-miss path of the token-request provider: the network and the bootstrap identity. Loaded with a dynamic
 * import, so a cache hit never parses undici or YAML.
 */
import { clip, CredentialsError, redactUrl } from '../../core/errors.js';
import type { ExecCluster } from '../../core/exec-credential.js';
import { connectionFromCluster } from '../../core/cluster-connection.js';
import { loadInClusterAccess, loadKubeAccess, type KubeAccessDeps } from '../../kube/kubeconfig.js';
import { createKubeTransport, KUBE_RETRY } from '../../kube/transport.js';
import type { KubeCredential, KubeEndpoint } from '../../kube/types.js';
import type { IssueContext, IssuedCredential } from '../../plugin/provider.js';
import { buildTokenRequest, processTokenRequestResponse } from './protocol.js';
import type { Bootstrap, TokenRequestProviderSettings } from './settings.js';
import { buildSecretRequest, parseSecretReaderSettings, processSecretResponse } from './secret-reader.js';

/** Relative file names (flags, KUBECONFIG entries) resolve against the directory the plugin runs in. */
function kubeDeps(context: IssueContext): KubeAccessDeps {
  return { env: context.env, cwd: process.cwd() };
}

/** Where a bootstrap credential may be sent: its own API server (kubeconfig, in-cluster), or the profile's (tenant-cert). */
interface BootstrapIdentity {
  credential: KubeCredential;
  source: string;
  /** The endpoint the credential belongs to; undefined: the credential is made for the profile's cluster. */
  endpoint?: KubeEndpoint;
}

async function bootstrapCredential(bootstrap: Bootstrap, cluster: ExecCluster, context: IssueContext): Promise<BootstrapIdentity> {
  switch (bootstrap.kind) {
    case 'kubeconfig':
      return loadKubeAccess({ kubeconfig: bootstrap.file, flag: '--bootstrap-kubeconfig', what: 'the bootstrap kubeconfig' }, kubeDeps(context));
    case 'in-cluster':
      return loadInClusterAccess(kubeDeps(context));
    case 'tenant-cert': {
      const { tenantCertCredential } = await import('./tenant-cert-bootstrap.js');
      return { credential: await tenantCertCredential(bootstrap, cluster, context), source: 'the tenant-cert identity' };
    }
  }
}

async function readSecret(settings: Extract<TokenRequestProviderSettings, { mode: 'secret-reader' }>, context: IssueContext): Promise<IssuedCredential> {
  const access = await loadKubeAccess({ kubeconfig: settings.hubKubeconfig, flag: '--hub-kubeconfig', what: "the hub's kubeconfig" }, kubeDeps(context));
  const reader = parseSecretReaderSettings(settings.config, settings.secretNamespace ?? access.namespace ?? 'default');
  const hub = createKubeTransport(access.endpoint, access.credential, { timeoutMs: settings.timeoutMs, retry: KUBE_RETRY });
  try {
    const response = await hub.send(buildSecretRequest(reader), { signal: context.signal });
    // No expiry: like the reference plugin, the token is handed over as the hub keeps it and never cached here.
    return { status: { token: processSecretResponse(response, reader) } };
  } finally {
    await hub.close();
  }
}

export async function issueToken(settings: TokenRequestProviderSettings, context: IssueContext): Promise<IssuedCredential> {
  if (settings.mode === 'secret-reader') {
    return readSecret(settings, context);
  }
  const { credential, source, endpoint } = await bootstrapCredential(settings.bootstrap, settings.cluster, context);
  if (credential.kind === 'none') {
    throw new CredentialsError('ERR_TOKEN_REQUEST_BOOTSTRAP', 'the bootstrap kubeconfig user has no credential (client certificate or token)', {
      path: source,
    });
  }
  const member = createKubeTransport(endpoint === undefined ? connectionFromCluster(settings.cluster) : boundEndpoint(endpoint, settings.cluster, source), credential, {
    timeoutMs: settings.timeoutMs,
    retry: KUBE_RETRY,
  });
  try {
    const sentAt = context.now();
    const response = await member.send(buildTokenRequest(settings.request), { signal: context.signal });
    const minted = processTokenRequestResponse(response, settings.request, { server: settings.cluster.server, now: sentAt });
    return { status: { token: minted.token, expirationTimestamp: minted.renewAt.toISOString().replace(/\.\d{3}Z$/, 'Z') } };
  } finally {
    await member.close();
  }
}

/** scheme://host:port/path without a trailing slash, default ports made explicit; undefined when not a URL. */
function serverKey(server: string): string | undefined {
  try {
    const url = new URL(server);
    const port = url.port === '' ? (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '') : url.port;
    return `${url.protocol}//${url.hostname.toLowerCase()}:${port}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return undefined;
  }
}

/**
 * A kubeconfig's or the pod's credential goes only to the API server it was issued for, over TLS, with that
 * server's own trust settings — never to whatever `spec.cluster.server` a ClusterProfile's author wrote (who could
 * otherwise collect the bootstrap token).
 */
function boundEndpoint(own: KubeEndpoint, cluster: ExecCluster, source: string): KubeEndpoint {
  const ownKey = serverKey(own.server);
  if (ownKey === undefined || !ownKey.startsWith('https:')) {
    throw new CredentialsError('ERR_TOKEN_REQUEST_BOOTSTRAP_SERVER', `the bootstrap identity's API server ${clip(redactUrl(own.server))} is not an https URL: its credential is never sent in the clear`, {
      path: source,
    });
  }
  if (serverKey(cluster.server) !== ownKey) {
    throw new CredentialsError(
      'ERR_TOKEN_REQUEST_BOOTSTRAP_SERVER',
      `the ClusterProfile names the server ${clip(redactUrl(cluster.server))}, but the bootstrap identity (${source}) belongs to ${clip(redactUrl(own.server))}: its credential is only sent to its own API server`,
      {
        path: 'KUBERNETES_EXEC_INFO $.spec.cluster.server',
        hint: 'bootstrap from a kubeconfig (or the in-cluster account) of that member cluster, or use --bootstrap tenant-cert',
      },
    );
  }
  return own;
}
