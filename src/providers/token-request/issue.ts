/**
 * The cache-miss path of the token-request provider: the network and the bootstrap identity. Loaded with a dynamic
 * import, so a cache hit never parses the HTTP seam, the Kubernetes client or the kubeconfig reader (undici, named
 * here before, is no longer on any plugin's path). Every request goes through the package's one Kubernetes client
 * (src/kube/kube-client.ts): a bootstrap kubeconfig's or the pod's rotated token or certificate is read again within
 * {@link BOOTSTRAP_REUSE_MS} and after a 401.
 */
import { clip, CredentialsError, redactUrl } from '../../base/errors.js';
import { formatTimestamp, type ExecCluster } from '../../base/exec-credential.js';
import { connectionFromCluster } from '../../base/cluster-connection.js';
import { monotonicMs } from '../../base/io.js';
import { KubeClient } from '../../kube/kube-client.js';
import { loadInClusterAccess, type KubeAccessDeps } from '../../kube/kubeconfig-loader.js';
import { KUBE_RETRY } from '../../kube/transport.js';
import type { KubeEndpoint } from '../../kube/types.js';
import type { IssueContext, IssuedCredential } from '../../plugin/provider.js';
import { buildTokenRequest, processTokenRequestResponse } from './protocol.js';
import type { TokenRequestProviderSettings } from './settings.js';
import { buildSecretRequest, parseSecretReaderSettings, processSecretResponse } from './secret-reader.js';

/** Relative file names (flags, KUBECONFIG entries) resolve against the directory the plugin runs in. */
function kubeDeps(context: IssueContext): KubeAccessDeps {
  return { env: context.env, cwd: process.cwd() };
}

/**
 * How long a bootstrap kubeconfig (or the pod's service account) once read serves the issuances of this process: a
 * fleet mints thousands of tokens with one bootstrap identity, and reading and parsing its kubeconfig each time was
 * most of an issuance's CPU. A rotated file (a renewed client certificate, the kubelet's new token) is read within
 * this long, and at once after a 401.
 */
const BOOTSTRAP_REUSE_MS = 10_000;

/**
 * How long an unused client keeps its connections for the next TokenRequest to the same server and identity: long
 * enough for a fleet's burst of issuances to one API server to share connections, short enough that members on as
 * many API servers (a tenant-cert bootstrap per member) do not keep a socket each for long.
 */
const TRANSPORT_IDLE_MS = 2_000;

interface SharedClient {
  client: Promise<KubeClient>;
  users: number;
  lastUsed: number;
  idle: ReturnType<typeof setTimeout> | undefined;
}

const clients = new Map<string, SharedClient>();

/**
 * The client for `key` (made by `make` the first time), shared by the TokenRequests of this process under way: a
 * fleet minting thousands of tokens through one bootstrap identity reuses its TLS connections and its kubeconfig read
 * instead of a handshake (and the CA parsed again) per token. Its connections close {@link TRANSPORT_IDLE_MS} after
 * the last user, the client itself is forgotten {@link BOOTSTRAP_REUSE_MS} after; neither timer nor the idle sockets
 * keep a plugin process alive. A client that could not be made is not kept.
 */
async function sharedClient(
  key: string,
  make: () => Promise<KubeClient>,
): Promise<{ client: KubeClient; release(): void }> {
  const now = monotonicMs();
  for (const [old, entry] of clients)
    if (entry.users === 0 && now - entry.lastUsed >= BOOTSTRAP_REUSE_MS) {
      clients.delete(old);
      void entry.client.then((client) => client.close()).catch(() => undefined);
    }
  let shared = clients.get(key);
  if (shared === undefined) {
    const created: SharedClient = { client: make(), users: 0, lastUsed: now, idle: undefined };
    created.client.catch(() => {
      if (clients.get(key) === created) clients.delete(key);
    });
    clients.set(key, created);
    shared = created;
  }
  const entry = shared;
  entry.users += 1;
  if (entry.idle !== undefined) clearTimeout(entry.idle);
  entry.idle = undefined;
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    entry.users -= 1;
    entry.lastUsed = monotonicMs();
    if (entry.users > 0) return;
    entry.idle = setTimeout(() => {
      if (entry.users === 0) void entry.client.then((client) => client.close()).catch(() => undefined);
    }, TRANSPORT_IDLE_MS);
    entry.idle.unref();
  };
  try {
    return { client: await entry.client, release };
  } catch (error) {
    release();
    throw error;
  }
}

/** What the kubeconfig order reads from the environment and the working directory (src/kube/kubeconfig-loader.ts). */
function accessInputs(context: IssueContext): unknown {
  const { env } = context;
  return [
    process.cwd(),
    env['KUBECONFIG'],
    env['HOME'],
    env['USERPROFILE'],
    env['KUBERNETES_SERVICE_HOST'],
    env['KUBERNETES_SERVICE_PORT'],
  ];
}

/** The client that sends a TokenRequest as the bootstrap identity, and the endpoint it must go to. */
async function bootstrapClient(
  settings: Extract<TokenRequestProviderSettings, { mode: 'token-request' }>,
  context: IssueContext,
): Promise<{ client: KubeClient; release(): void }> {
  const { bootstrap, cluster, timeoutMs } = settings;
  const options = { timeoutMs, retry: KUBE_RETRY, rereadMs: BOOTSTRAP_REUSE_MS };
  switch (bootstrap.kind) {
    case 'kubeconfig':
      return sharedClient(JSON.stringify([bootstrap, accessInputs(context), timeoutMs]), () =>
        KubeClient.load(
          { kubeconfig: bootstrap.file, flag: '--bootstrap-kubeconfig', what: 'the bootstrap kubeconfig' },
          kubeDeps(context),
          options,
        ),
      );
    case 'in-cluster':
      return sharedClient(JSON.stringify([bootstrap, accessInputs(context), timeoutMs]), async () => {
        const load = () => loadInClusterAccess(kubeDeps(context));
        return KubeClient.fromAccess(await load(), load, options);
      });
    case 'tenant-cert': {
      const { tenantCertCredential } = await import('./tenant-cert-bootstrap.js');
      // Made for the profile's cluster: sent there.
      const credential = await tenantCertCredential(bootstrap, cluster, context);
      const endpoint = connectionFromCluster(cluster);
      // In memory only: the key holds the credential, as the client does.
      return sharedClient(JSON.stringify([endpoint, credential, timeoutMs]), async () =>
        KubeClient.static(endpoint, credential, { ...options, source: 'the tenant-cert identity' }),
      );
    }
  }
}

async function readSecret(
  settings: Extract<TokenRequestProviderSettings, { mode: 'secret-reader' }>,
  context: IssueContext,
): Promise<IssuedCredential> {
  const hub = await KubeClient.load(
    { kubeconfig: settings.hubKubeconfig, flag: '--hub-kubeconfig', what: "the hub's kubeconfig" },
    kubeDeps(context),
    { timeoutMs: settings.timeoutMs, retry: KUBE_RETRY },
  );
  const reader = parseSecretReaderSettings(
    settings.config,
    settings.secretNamespace ?? hub.access.namespace ?? 'default',
    settings.managedServiceAccount,
  );
  try {
    const response = await hub.send(buildSecretRequest(reader), { signal: context.signal });
    // No expiry: like the reference plugin, the token is handed over as the hub keeps it and never cached here.
    return { status: { token: processSecretResponse(response, reader) } };
  } finally {
    await hub.close();
  }
}

export async function issueToken(
  settings: TokenRequestProviderSettings,
  context: IssueContext,
): Promise<IssuedCredential> {
  if (settings.mode === 'secret-reader') {
    return readSecret(settings, context);
  }
  const member = await bootstrapClient(settings, context);
  try {
    const { client } = member;
    // A file due to be read again is read now: the checks below judge the credential the request will carry.
    await client.authenticate();
    const { credential, endpoint, source } = client.access;
    if (credential.kind === 'none') {
      throw new CredentialsError(
        'ERR_TOKEN_REQUEST_BOOTSTRAP',
        'the bootstrap kubeconfig user has no credential (client certificate or token)',
        {
          path: source,
        },
      );
    }
    if (settings.bootstrap.kind !== 'tenant-cert') boundEndpoint(endpoint, settings.cluster, source);
    const sentAt = context.now();
    const response = await client.send(buildTokenRequest(settings.request), { signal: context.signal });
    const minted = processTokenRequestResponse(response, settings.request, {
      server: settings.cluster.server,
      now: sentAt,
    });
    return {
      status: {
        token: minted.token,
        expirationTimestamp: formatTimestamp(minted.renewAt.getTime(), { seconds: true }),
      },
    };
  } finally {
    member.release();
  }
}

/** scheme://host:port/path without a trailing slash, default ports made explicit; undefined when not a URL. */
function serverKey(server: string): string | undefined {
  try {
    const url = new URL(server);
    const port =
      url.port === '' ? (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '') : url.port;
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
function boundEndpoint(own: KubeEndpoint, cluster: ExecCluster, source: string): void {
  const ownKey = serverKey(own.server);
  if (ownKey === undefined || !ownKey.startsWith('https:')) {
    throw new CredentialsError(
      'ERR_TOKEN_REQUEST_BOOTSTRAP_SERVER',
      `the bootstrap identity's API server ${clip(redactUrl(own.server))} is not an https URL: its credential is never sent in the clear`,
      {
        path: source,
      },
    );
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
}
