/**
 * The cache-miss path of the token-request provider: the network and the bootstrap identity. Loaded with a dynamic
 * import, so a cache hit never parses the HTTP seam, the Kubernetes transport or the kubeconfig reader (undici, named
 * here before, is no longer on any plugin's path).
 */
import { clip, CredentialsError, redactUrl } from '../../core/errors.js';
import { formatTimestamp, type ExecCluster } from '../../core/exec-credential.js';
import { connectionFromCluster } from '../../core/cluster-connection.js';
import { monotonicMs } from '../../core/io.js';
import {
  loadInClusterAccess,
  loadKubeAccess,
  type KubeAccess,
  type KubeAccessDeps,
} from '../../kube/kubeconfig-loader.js';
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

/**
 * How long a bootstrap kubeconfig (or the pod's service account) once read serves the issuances of this process: a
 * fleet mints thousands of tokens with one bootstrap identity, and reading and parsing its kubeconfig each time was
 * most of an issuance's CPU. A rotated file (a renewed client certificate, the kubelet's new token) is read within
 * this long.
 */
const BOOTSTRAP_REUSE_MS = 10_000;
const bootstrapAccess = new Map<string, { at: number; access: Promise<KubeAccess> }>();

/** `load` once per {@link BOOTSTRAP_REUSE_MS} for the same inputs (a failure is not kept). */
function reusedAccess(inputs: unknown, load: () => Promise<KubeAccess>): Promise<KubeAccess> {
  const key = JSON.stringify(inputs);
  const now = monotonicMs();
  const known = bootstrapAccess.get(key);
  if (known !== undefined && now - known.at < BOOTSTRAP_REUSE_MS) return known.access;
  for (const [old, entry] of bootstrapAccess) if (now - entry.at >= BOOTSTRAP_REUSE_MS) bootstrapAccess.delete(old);
  const access = load();
  bootstrapAccess.set(key, { at: now, access });
  access.catch(() => {
    if (bootstrapAccess.get(key)?.access === access) bootstrapAccess.delete(key);
  });
  return access;
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

async function bootstrapCredential(
  bootstrap: Bootstrap,
  cluster: ExecCluster,
  context: IssueContext,
): Promise<BootstrapIdentity> {
  switch (bootstrap.kind) {
    case 'kubeconfig':
      return reusedAccess([bootstrap, accessInputs(context)], () =>
        loadKubeAccess(
          { kubeconfig: bootstrap.file, flag: '--bootstrap-kubeconfig', what: 'the bootstrap kubeconfig' },
          kubeDeps(context),
        ),
      );
    case 'in-cluster':
      return reusedAccess([bootstrap, accessInputs(context)], () => loadInClusterAccess(kubeDeps(context)));
    case 'tenant-cert': {
      const { tenantCertCredential } = await import('./tenant-cert-bootstrap.js');
      return {
        credential: await tenantCertCredential(bootstrap, cluster, context),
        source: 'the tenant-cert identity',
      };
    }
  }
}

async function readSecret(
  settings: Extract<TokenRequestProviderSettings, { mode: 'secret-reader' }>,
  context: IssueContext,
): Promise<IssuedCredential> {
  const access = await loadKubeAccess(
    { kubeconfig: settings.hubKubeconfig, flag: '--hub-kubeconfig', what: "the hub's kubeconfig" },
    kubeDeps(context),
  );
  const reader = parseSecretReaderSettings(settings.config, settings.secretNamespace ?? access.namespace ?? 'default');
  const hub = createKubeTransport(access.endpoint, access.credential, {
    timeoutMs: settings.timeoutMs,
    retry: KUBE_RETRY,
  });
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
  const { credential, source, endpoint } = await bootstrapCredential(settings.bootstrap, settings.cluster, context);
  if (credential.kind === 'none') {
    throw new CredentialsError(
      'ERR_TOKEN_REQUEST_BOOTSTRAP',
      'the bootstrap kubeconfig user has no credential (client certificate or token)',
      {
        path: source,
      },
    );
  }
  const target =
    endpoint === undefined
      ? connectionFromCluster(settings.cluster)
      : boundEndpoint(endpoint, settings.cluster, source);
  const member = memberTransport(target, credential, settings.timeoutMs);
  try {
    const sentAt = context.now();
    const response = await member.send(buildTokenRequest(settings.request), { signal: context.signal });
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

/**
 * How long an unused transport (its keep-alive connections) is kept for the next TokenRequest to the same server and
 * identity: long enough for a fleet's burst of issuances to one API server to share connections, short enough that
 * members on as many API servers (a tenant-cert bootstrap per member) do not keep a socket each for long.
 */
const TRANSPORT_IDLE_MS = 2_000;

interface SharedTransport {
  transport: ReturnType<typeof createKubeTransport>;
  users: number;
  idle: ReturnType<typeof setTimeout> | undefined;
}

const transports = new Map<string, SharedTransport>();

/**
 * The transport to `endpoint` as `credential`, shared by the TokenRequests of this process under way and closed
 * {@link TRANSPORT_IDLE_MS} after the last: a fleet minting thousands of tokens through one bootstrap identity reuses
 * its TLS connections instead of a handshake (and the CA parsed again) per token. The idle timer and the idle sockets
 * do not keep a plugin process alive.
 */
function memberTransport(
  endpoint: KubeEndpoint,
  credential: KubeCredential,
  timeoutMs: number,
): { send: ReturnType<typeof createKubeTransport>['send']; release(): void } {
  // In memory only: the key holds the credential, as the transport does.
  const key = JSON.stringify([endpoint, credential, timeoutMs]);
  let shared = transports.get(key);
  if (shared === undefined) {
    shared = {
      transport: createKubeTransport(endpoint, credential, { timeoutMs, retry: KUBE_RETRY }),
      users: 0,
      idle: undefined,
    };
    transports.set(key, shared);
  }
  const entry = shared;
  entry.users += 1;
  if (entry.idle !== undefined) clearTimeout(entry.idle);
  entry.idle = undefined;
  let released = false;
  return {
    send: entry.transport.send,
    release() {
      if (released) return;
      released = true;
      entry.users -= 1;
      if (entry.users > 0) return;
      entry.idle = setTimeout(() => {
        if (entry.users > 0 || transports.get(key) !== entry) return;
        transports.delete(key);
        void entry.transport.close();
      }, TRANSPORT_IDLE_MS);
      entry.idle.unref();
    },
  };
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
function boundEndpoint(own: KubeEndpoint, cluster: ExecCluster, source: string): KubeEndpoint {
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
  return own;
}
