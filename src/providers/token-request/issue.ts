/**
 * The cache-miss path of the token-request provider: the network and the bootstrap identity. Loaded with a dynamic
 * import, so a cache hit never parses undici or YAML.
 */
import { CredentialsError } from '../../core/errors.js';
import type { ExecCluster } from '../../core/exec-credential.js';
import { connectionFromCluster } from '../../core/cluster-connection.js';
import { loadInClusterAccess, loadKubeconfigAccess } from '../../kube/kubeconfig.js';
import { createKubeTransport, KUBE_RETRY } from '../../kube/transport.js';
import type { KubeCredential } from '../../kube/types.js';
import type { IssueContext, IssuedCredential } from '../../plugin/provider.js';
import { buildTokenRequest, processTokenRequestResponse } from './protocol.js';
import type { Bootstrap, TokenRequestProviderSettings } from './settings.js';
import { buildSecretRequest, parseSecretReaderSettings, processSecretResponse } from './secret-reader.js';

async function bootstrapCredential(bootstrap: Bootstrap, cluster: ExecCluster, context: IssueContext): Promise<KubeCredential> {
  switch (bootstrap.kind) {
    case 'kubeconfig':
      return (await loadKubeconfigAccess(bootstrap.file)).credential;
    case 'in-cluster':
      return (await loadInClusterAccess(context.env)).credential;
    case 'tenant-cert': {
      const { tenantCertCredential } = await import('./tenant-cert-bootstrap.js');
      return tenantCertCredential(bootstrap, cluster, context);
    }
  }
}

async function readSecret(settings: Extract<TokenRequestProviderSettings, { mode: 'secret-reader' }>, context: IssueContext): Promise<IssuedCredential> {
  const access = settings.hubKubeconfig === undefined ? await loadInClusterAccess(context.env) : await loadKubeconfigAccess(settings.hubKubeconfig);
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
  const credential = await bootstrapCredential(settings.bootstrap, settings.cluster, context);
  if (credential.kind === 'none') {
    throw new CredentialsError('ERR_TOKEN_REQUEST_USAGE', 'the bootstrap kubeconfig user has no credential (client certificate or token)', {
      path: '--bootstrap-kubeconfig',
    });
  }
  const member = createKubeTransport(connectionFromCluster(settings.cluster), credential, { timeoutMs: settings.timeoutMs, retry: KUBE_RETRY });
  try {
    const sentAt = context.now();
    const response = await member.send(buildTokenRequest(settings.request), { signal: context.signal });
    const minted = processTokenRequestResponse(response, settings.request, { server: settings.cluster.server, now: sentAt });
    return { status: { token: minted.token, expirationTimestamp: minted.renewAt.toISOString().replace(/\.\d{3}Z$/, 'Z') } };
  } finally {
    await member.close();
  }
}
