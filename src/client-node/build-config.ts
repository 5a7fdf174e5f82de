/**
 * ClusterProfile → a @kubernetes/client-node `KubeConfig` whose requests authenticate through OUR exec
 * implementation (KUBERNETES_EXEC_INFO, provideClusterInfo, client-go output validation, cache keyed by the
 * plugin's input, single flight, refresh ahead of expiry, 401 refresh, timeout, recursion guard).
 *
 * How it plugs into client-node 2.x: {@link ClusterProfileKubeConfig} subclasses `KubeConfig` and overrides the two
 * public entry points every client-node request goes through — `applySecurityAuthentication` (makeApiClient, Watch,
 * Log, Metrics, health: undici fetch) and `applyToHTTPSOptions` (Exec, Attach, PortForward, Cp: WebSockets). Its
 * user carries no `exec` (nor any other auth field), so client-node's built-in ExecAuth never runs for it.
 *
 * @see https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/4322-cluster-inventory
 */
import http from 'node:http';
import https from 'node:https';
import { KubeConfig, type Cluster as KubeCluster, type RequestContext, type User } from '@kubernetes/client-node';
import { Agent, Dispatcher, ProxyAgent } from 'undici';
import { connectionFromCluster, connectionHttpOptions } from '../base/cluster-connection.js';
import { CredentialsError } from '../base/errors.js';
import { type NodeTlsOptions, nodeTlsOptions } from '../base/http.js';
import { ExecCredentialCache, type ExecAuthenticator } from '../exec/authenticator.js';
import type { ExecCredential } from '../exec/output.js';
import { resolveClusterAccess, type ResolveOptions } from '../resolve/cluster-access.js';
import type { AccessConfig, ClusterProfile, ResolvedClusterAccess } from '../resolve/types.js';

/** Options of {@link buildConfigFromClusterProfile}: the resolution options plus the credential cache. */
export interface BuildConfigOptions extends ResolveOptions {
  /**
   * Where credentials live. Default: one process-wide cache (so every KubeConfig for the same plugin input shares a
   * credential and a single flight). Pass your own to set the exec timeout, refresh margin, env, clock:
   * `new ExecCredentialCache({ timeoutMs: 30_000 })`.
   */
  cache?: ExecCredentialCache;
  /**
   * Most TLS connections open at once to the cluster (HTTP/1.1; further requests queue). A watch holds one for its
   * lifetime, so keep this above the number of concurrent watches. Default {@link DEFAULT_MAX_CONNECTIONS}; `0` = no limit
   * (client-node itself opens a fresh connection per request).
   */
  maxConnections?: number;
}

/** Default connection limit per cluster: a burst of 1000 requests shares 100 kept-alive connections. */
export const DEFAULT_MAX_CONNECTIONS = 100;

let defaultCache: ExecCredentialCache | undefined;

/** The process-wide credential cache {@link buildConfigFromClusterProfile} uses unless given one. */
export function defaultExecCredentialCache(): ExecCredentialCache {
  defaultCache ??= new ExecCredentialCache();
  return defaultCache;
}

/** undici's 401 signal, on both handler generations (`onResponseStart` since undici 7, `onHeaders` before). */
function watchForUnauthorized(
  handler: Dispatcher.DispatchHandler,
  onUnauthorized: () => void,
): Dispatcher.DispatchHandler {
  return new Proxy(handler, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') {
        return value;
      }
      if (property === 'onResponseStart') {
        return (controller: unknown, status: number, ...rest: unknown[]) => {
          if (status === 401) onUnauthorized();
          return (value as (...a: unknown[]) => unknown).call(target, controller, status, ...rest);
        };
      }
      if (property === 'onHeaders') {
        return (status: number, ...rest: unknown[]) => {
          if (status === 401) onUnauthorized();
          return (value as (...a: unknown[]) => unknown).call(target, status, ...rest);
        };
      }
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}

/**
 * The dispatcher one request gets: the connection pool of the credential's client certificate, plus a 401 watch that
 * tells the authenticator which credential was refused. Closing it does not close the shared pool.
 */
class CredentialDispatcher extends Dispatcher {
  readonly #pool: Dispatcher;
  readonly #onUnauthorized: () => void;

  constructor(pool: Dispatcher, onUnauthorized: () => void) {
    super();
    this.#pool = pool;
    this.#onUnauthorized = onUnauthorized;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    return this.#pool.dispatch(options, watchForUnauthorized(handler, this.#onUnauthorized));
  }

  override close(): Promise<void>;
  override close(callback: () => void): void;
  override close(callback?: () => void): Promise<void> | void {
    if (callback !== undefined) {
      queueMicrotask(callback);
      return;
    }
    return Promise.resolve();
  }

  override destroy(): Promise<void>;
  override destroy(error: Error | null): Promise<void>;
  override destroy(callback: () => void): void;
  override destroy(error: Error | null, callback: () => void): void;
  override destroy(a?: unknown, b?: unknown): Promise<void> | void {
    const callback = typeof a === 'function' ? a : typeof b === 'function' ? b : undefined;
    if (callback !== undefined) {
      queueMicrotask(callback as () => void);
      return;
    }
    return Promise.resolve();
  }
}

/**
 * The shared agent, seen through a per-request view that watches the response status: node's ClientRequest (and so
 * the `ws` WebSocket handshake) hands every request to `agent.addRequest`, where a 401 can be observed.
 */
function perRequestAgent(agent: http.Agent, onUnauthorized: () => void): http.Agent {
  const view = Object.create(agent) as http.Agent & { addRequest(req: http.ClientRequest, options: unknown): void };
  const shared = agent as http.Agent & { addRequest(req: http.ClientRequest, options: unknown): void };
  view.addRequest = (req: http.ClientRequest, options: unknown) => {
    req.once('response', (res: http.IncomingMessage) => {
      if (res.statusCode === 401) onUnauthorized();
    });
    shared.addRequest(req, options);
  };
  return view;
}

type AgentFactory = (cluster: KubeCluster, options: https.AgentOptions) => http.Agent;
type DispatcherFactory = (cluster: KubeCluster, options: https.AgentOptions) => Dispatcher | undefined;

/** client-node's own (TS-private) proxy agent factories, used only for what undici/node cannot do here: SOCKS and WebSocket proxies. */
function clientNodeFactory<T>(name: 'createAgent' | 'createDispatcher'): T {
  const method: unknown = Reflect.get(KubeConfig.prototype, name);
  if (typeof method !== 'function') {
    throw new TypeError(`@kubernetes/client-node has no KubeConfig.${name}: this proxy type needs client-node 2.0.x`);
  }
  return ((cluster: KubeCluster, options: https.AgentOptions) => {
    const scratch = new KubeConfig();
    scratch.loadFromClusterAndUser(cluster, { name: 'scratch' });
    return (method as (c: KubeCluster, o: https.AgentOptions) => unknown).call(scratch, cluster, options);
  }) as T;
}

/**
 * A `KubeConfig` for one ClusterProfile. Requests get their credential from an {@link ExecAuthenticator}; the TLS
 * connection pool is keyed by the client certificate's fingerprint, so a rotated certificate is used on new
 * connections at once (the old pool is closed gracefully), instead of client-node's per [cluster, user] agent cache.
 */
export class ClusterProfileKubeConfig extends KubeConfig {
  /** What the profile resolved to (plain data; the exec config the plugin runs with). */
  readonly access: ResolvedClusterAccess;
  readonly #cache: ExecCredentialCache;
  #authenticator: ExecAuthenticator | undefined;
  #pool: { fingerprint: string; dispatcher: Dispatcher } | undefined;
  #agent: { fingerprint: string; agent: http.Agent } | undefined;
  /** Set by `close({ revoke: true })`: every request from then on is refused with it. */
  #revoked: CredentialsError | undefined;

  readonly #maxConnections: number;

  constructor(access: ResolvedClusterAccess, cache: ExecCredentialCache, options: { maxConnections?: number } = {}) {
    super();
    this.access = access;
    this.#cache = cache;
    this.#maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    const c = access.cluster;
    const clusterName =
      access.profile.namespace === undefined
        ? access.profile.name
        : `${access.profile.namespace}/${access.profile.name}`;
    const cluster: KubeCluster = {
      name: clusterName,
      server: c.server,
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      ...(c['certificate-authority-data'] === undefined ? {} : { caData: c['certificate-authority-data'] }),
      ...(c['tls-server-name'] === undefined ? {} : { tlsServerName: c['tls-server-name'] }),
      ...(c['proxy-url'] === undefined ? {} : { proxyUrl: c['proxy-url'] }),
    };
    // No exec / authProvider / token / cert here: client-node's built-in authenticators must not claim this user.
    const user: User = { name: `${access.providerName}@${clusterName}` };
    this.loadFromClusterAndUser(cluster, user);
  }

  /** The authenticator of this cluster's plugin input (shared through the cache). */
  get authenticator(): ExecAuthenticator {
    this.#authenticator ??= this.#cache.authenticatorFor(this.access.exec, this.access.cluster);
    return this.#authenticator;
  }

  /** The node TLS options of this cluster (CA, server name, verification) with the credential's client certificate. */
  #tls(credential: ExecCredential): NodeTlsOptions {
    const client =
      credential.clientCertificate !== undefined && credential.clientKey !== undefined
        ? { certPem: credential.clientCertificate, keyPem: credential.clientKey }
        : undefined;
    return nodeTlsOptions(connectionHttpOptions(connectionFromCluster(this.access.cluster), client).tls);
  }

  /** The undici pool for this credential's client certificate; a new certificate gets a new pool. */
  #dispatcherFor(credential: ExecCredential): Dispatcher {
    const fingerprint = credential.certificateFingerprint ?? '';
    if (this.#pool?.fingerprint === fingerprint) {
      return this.#pool.dispatcher;
    }
    const tls = this.#tls(credential);
    const proxyUrl = this.access.cluster['proxy-url'];
    let dispatcher: Dispatcher;
    if (proxyUrl === undefined || proxyUrl === '') {
      // Always an explicit Agent: never undici's global dispatcher, so no environment proxy (NODE_USE_ENV_PROXY).
      dispatcher = new Agent({
        connect: { ...tls, keepAlive: true, keepAliveInitialDelay: 30_000 },
        ...(this.#maxConnections > 0 ? { connections: this.#maxConnections } : {}),
      });
    } else if (proxyUrl.startsWith('socks')) {
      const created = clientNodeFactory<DispatcherFactory>('createDispatcher')(this.getCurrentCluster()!, tls);
      if (created === undefined) throw new TypeError('client-node made no SOCKS dispatcher');
      dispatcher = created;
    } else {
      dispatcher = new ProxyAgent({
        uri: proxyUrl,
        requestTls: tls,
        ...(this.#maxConnections > 0 ? { connections: this.#maxConnections } : {}),
      });
    }
    const previous = this.#pool;
    this.#pool = { fingerprint, dispatcher };
    // client-go closes connections when the client certificate changes; in-flight requests finish first.
    previous?.dispatcher.close().catch(() => undefined);
    return dispatcher;
  }

  /** The node agent (WebSocket paths) for this credential's client certificate. */
  #agentFor(credential: ExecCredential, options: https.AgentOptions): http.Agent {
    const fingerprint = credential.certificateFingerprint ?? '';
    if (this.#agent?.fingerprint === fingerprint) {
      return this.#agent.agent;
    }
    const proxyUrl = this.access.cluster['proxy-url'];
    const agent =
      proxyUrl !== undefined && proxyUrl !== ''
        ? clientNodeFactory<AgentFactory>('createAgent')(this.getCurrentCluster()!, options)
        : this.access.cluster.server.startsWith('http:')
          ? new http.Agent(options)
          : new https.Agent(options);
    const previous = this.#agent;
    this.#agent = { fingerprint, agent };
    previous?.agent.destroy();
    return agent;
  }

  /**
   * Closes this KubeConfig's connections (in-flight requests finish) and, with `forgetCredential`, drops the cached
   * credential of its plugin input from the cache (other KubeConfigs for the same input will exec again). With
   * `revoke` (a sharded fleet's member handed to another replica) requests in flight are aborted and every later one
   * is refused with `ERR_FLEET_CLOSED`: a client kept from before can no longer reach the cluster.
   */
  async close(options: { forgetCredential?: boolean; revoke?: boolean } = {}): Promise<void> {
    const pool = this.#pool;
    const agent = this.#agent;
    this.#pool = undefined;
    this.#agent = undefined;
    agent?.agent.destroy();
    if (options.forgetCredential === true) {
      this.#cache.forget(this.access.exec, this.access.cluster);
      this.#authenticator = undefined;
    }
    if (options.revoke === true) {
      this.#revoked = new CredentialsError(
        'ERR_FLEET_CLOSED',
        `the client of ClusterProfile ${this.getCurrentCluster()?.name ?? this.access.profile.name} was revoked: its member is no longer this replica's`,
        { path: this.access.profile.name },
      );
      await pool?.dispatcher.destroy(this.#revoked);
      return;
    }
    await pool?.dispatcher.close();
  }

  #refuseIfRevoked(): void {
    if (this.#revoked !== undefined) throw this.#revoked;
  }

  #onUnauthorized(credential: ExecCredential): () => void {
    return () => this.authenticator.onUnauthorized(credential);
  }

  /** client-node's hook for fetch-based requests (makeApiClient, Watch, Log, Metrics, health). */
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    this.#refuseIfRevoked();
    const credential = await this.authenticator.getCredential();
    this.#refuseIfRevoked();
    if (credential.token !== undefined) {
      context.setHeaderParam('Authorization', `Bearer ${credential.token}`);
    }
    if (this.access.cluster['disable-compression'] === true) {
      context.setHeaderParam('Accept-Encoding', 'identity');
    }
    context.setDispatcher(new CredentialDispatcher(this.#dispatcherFor(credential), this.#onUnauthorized(credential)));
  }

  /** client-node's hook for WebSocket requests (Exec, Attach, PortForward, Cp) and the protobuf client. */
  override async applyToHTTPSOptions(opts: Parameters<KubeConfig['applyToHTTPSOptions']>[0]): Promise<void> {
    this.#refuseIfRevoked();
    const credential = await this.authenticator.getCredential();
    this.#refuseIfRevoked();
    const tls = this.#tls(credential);
    const target = opts as https.RequestOptions;
    const headers: Record<string, unknown> = { ...(target.headers as Record<string, unknown> | undefined) };
    if (credential.token !== undefined) headers.Authorization = `Bearer ${credential.token}`;
    if (this.access.cluster['disable-compression'] === true) headers['Accept-Encoding'] = 'identity';
    target.headers = headers as http.OutgoingHttpHeaders;
    Object.assign(target, tls);
    target.agent = perRequestAgent(this.#agentFor(credential, { ...tls }), this.#onUnauthorized(credential));
  }
}

/**
 * Builds a client-node `KubeConfig` for one ClusterProfile: the provider is chosen and the exec config computed by
 * {@link resolveClusterAccess} (BuildConfigFromCP semantics); requests through `kc.makeApiClient(...)`, `Watch`,
 * `Log`, `Exec`, `Attach`, `PortForward` authenticate by running that plugin through this package's exec
 * implementation. Synchronous and cheap: the plugin runs on the first request, not here.
 *
 * Errors: those of {@link resolveClusterAccess} (`ERR_NO_MATCHING_PROVIDER`, `ERR_NO_EXEC_CONFIG`, ...) now; the
 * exec errors (`ERR_EXEC_*`) from the first request that needs a credential.
 *
 * @example
 * ```ts
 * import { CoreV1Api } from '@kubernetes/client-node';
 * import { buildConfigFromClusterProfile, loadAccessConfig } from 'clusterprofile-credentials';
 *
 * const accessConfig = await loadAccessConfig('clusterprofile-provider-file.json');
 * const kc = buildConfigFromClusterProfile(profile, accessConfig);
 * const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
 * ```
 */
export function buildConfigFromClusterProfile(
  profile: ClusterProfile,
  accessConfig: AccessConfig,
  options: BuildConfigOptions = {},
): ClusterProfileKubeConfig {
  const access = resolveClusterAccess(profile, accessConfig, options.warn === undefined ? {} : { warn: options.warn });
  return new ClusterProfileKubeConfig(
    access,
    options.cache ?? defaultExecCredentialCache(),
    options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections },
  );
}
