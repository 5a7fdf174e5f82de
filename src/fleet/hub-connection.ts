/**
 * The fleet's connection to the hub (the CLI's one-profile read is src/cli/hub-profiles.ts): list the ClusterProfiles of one
 * namespace (paged, v1alpha1 else v1alpha2) and watch them from a resourceVersion with bookmarks. Hub access is found
 * as every other identity of this package (src/kube/kubeconfig-loader.ts: flag, KUBECONFIG merged, ~/.kube/config,
 * in-cluster); a hub user with `exec` (EKS, GKE, OIDC logins) runs through this package's exec authenticator,
 * refreshed before expiry.
 *
 * Lists go through the one HTTP seam (src/kube/transport.ts over src/core/http.ts: deadline, retries, redaction).
 * A watch is a stream the seam does not model (it buffers whole answers under one deadline), so it is read here with
 * undici, on the same TLS settings, with an idle deadline instead: the API server sends a bookmark about once a
 * minute, so a watch silent for {@link DEFAULT_WATCH_IDLE_MS} is dead and is reopened from its resourceVersion.
 * @kubernetes/client-node is not needed for any of it.
 */
import type { Dispatcher } from 'undici';
import { connectionHttpOptions } from '../core/cluster-connection.js';
import { CredentialsError, formatError, isCredentialsError, withoutUserinfo } from '../core/errors.js';
import type { Env } from '../core/io.js';
import { CLUSTERPROFILE_GROUP, CLUSTERPROFILE_PLURAL, CLUSTERPROFILE_VERSIONS } from '../kube/cluster-profile.js';
import { loadKubeAccess, type KubeAccess } from '../kube/kubeconfig-loader.js';
import { statusMessage } from '../kube/status.js';
import { createKubeTransport, KUBE_RETRY } from '../kube/transport.js';
import type { KubeCredential, KubeResponse } from '../kube/types.js';
import { MAX_EVENT_BYTES, WatchLines } from '../kube/watch.js';
import { assertDocument } from '../schemas/index.js';
import { ExecAuthenticator } from '../exec/authenticator.js';
import type { ExecCredential } from '../exec/output.js';
import type { ExecCluster, ExecConfig } from '../resolve/types.js';

/** The resource every hub error names. */
export const CLUSTERPROFILE_RESOURCE = `${CLUSTERPROFILE_PLURAL}.${CLUSTERPROFILE_GROUP}`;
export type ClusterProfileVersion = (typeof CLUSTERPROFILE_VERSIONS)[number];

/** A watch that has said nothing (not even a bookmark) for this long is reopened. */
export const DEFAULT_WATCH_IDLE_MS = 180_000;
/** Items per list page (client-go's reflector pages by 500 too). */
export const DEFAULT_PAGE_SIZE = 500;

export type HubVerb = 'list' | 'watch';

/** One watch event; `object` is the ClusterProfile (or, for `ERROR`, a Status). */
export interface HubWatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: Record<string, unknown>;
}

/** The resourceVersion the watch started from is gone (HTTP 410, or an ERROR event with code 410): list again. */
export class HubGoneError extends Error {
  override readonly name = 'HubGoneError';
}

/** How a fleet reaches its hub: a kubeconfig and context or loaded access, plus list and watch tuning. */
export interface FleetHubOptions {
  /** The hub's kubeconfig file (alone); default: KUBECONFIG, else ~/.kube/config, else in-cluster. */
  kubeconfig?: string;
  /** A context instead of the current one. */
  context?: string;
  /** Hub access already loaded (then `kubeconfig` and `context` are ignored). */
  access?: KubeAccess;
  /** Deadline of one list page, retries included (default 30 s). */
  requestTimeoutMs?: number;
  /** Default {@link DEFAULT_WATCH_IDLE_MS}. */
  watchIdleMs?: number;
  /** Default {@link DEFAULT_PAGE_SIZE}. */
  pageSize?: number;
}

interface HubConnectionDeps {
  env: Env;
  cwd: string;
  /** Random source for the watch's server-side timeout. */
  random: () => number;
}

/** One hub connection: list and watch ClusterProfiles in one namespace, as the hub identity of its kubeconfig. */
export class HubConnection {
  #access: KubeAccess;
  readonly #options: FleetHubOptions;
  readonly #deps: HubConnectionDeps;
  #reloadAccess = false;
  #authenticator: ExecAuthenticator | undefined;
  #transport: { credential: KubeCredential; transport: ReturnType<typeof createKubeTransport> } | undefined;
  #agent: { credential: KubeCredential; dispatcher: Dispatcher } | undefined;
  #version: ClusterProfileVersion | undefined;

  /** Hub access already found; {@link open} finds it. */
  constructor(access: KubeAccess, options: FleetHubOptions, deps: HubConnectionDeps) {
    this.#access = access;
    this.#options = options;
    this.#deps = deps;
  }

  /** Finds hub access (ERR_KUBECONFIG_* / ERR_IN_CLUSTER_UNAVAILABLE when there is none). */
  static async open(options: FleetHubOptions, deps: HubConnectionDeps): Promise<HubConnection> {
    const access = options.access ?? (await HubConnection.#load(options, deps));
    return new HubConnection(access, options, deps);
  }

  static #load(options: FleetHubOptions, deps: HubConnectionDeps): Promise<KubeAccess> {
    return loadKubeAccess(
      {
        ...(options.kubeconfig === undefined ? {} : { kubeconfig: options.kubeconfig }),
        ...(options.context === undefined ? {} : { context: options.context }),
        what: "the hub's kubeconfig",
        allowExec: true,
      },
      { env: deps.env, cwd: deps.cwd },
    );
  }

  /** The hub's API server URL (without userinfo), for messages. */
  get server(): string {
    return withoutUserinfo(this.#access.endpoint.server);
  }

  /** Where the hub access came from (`context "hub" of /path`), for messages. */
  get source(): string {
    return this.#access.source;
  }

  /** The ClusterProfile version the hub serves (after the first list). */
  get version(): ClusterProfileVersion | undefined {
    return this.#version;
  }

  /**
   * Every ClusterProfile of `namespace`, page by page (each page is handed to `onPage` as it arrives and dropped, so a
   * large inventory's list never sits in memory at once), and the list's resourceVersion (where a watch starts). An expired
   * continue token starts the list over: `onStart` runs before each attempt. The first list asks for v1alpha1 and,
   * when the hub does not serve it, v1alpha2; later lists ask for the same.
   */
  async list(
    namespace: string,
    signal: AbortSignal,
    handlers: { onStart(): void; onPage(items: unknown[]): void },
  ): Promise<{ resourceVersion: string; version: ClusterProfileVersion }> {
    for (let restart = 0; ; restart += 1) {
      handlers.onStart();
      try {
        return await this.#listOnce(namespace, signal, handlers.onPage);
      } catch (error) {
        // An expired continue token: the snapshot is gone, start the list over.
        if (error instanceof HubGoneError && restart < 3) continue;
        if (error instanceof HubGoneError) {
          throw new CredentialsError(
            'ERR_FLEET_HUB_REQUEST',
            `cannot list ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} on the hub ${this.server}: the list kept expiring`,
            {
              path: this.server,
            },
          );
        }
        throw error;
      }
    }
  }

  async #listOnce(
    namespace: string,
    signal: AbortSignal,
    onPage: (items: unknown[]) => void,
  ): Promise<{ resourceVersion: string; version: ClusterProfileVersion }> {
    const pageSize = this.#options.pageSize ?? DEFAULT_PAGE_SIZE;
    let token: string | undefined;
    let resourceVersion = '';
    const versions = this.#version === undefined ? CLUSTERPROFILE_VERSIONS : [this.#version];
    let version: ClusterProfileVersion = versions[0]!;
    do {
      const query = `?limit=${pageSize}${token === undefined ? '' : `&continue=${encodeURIComponent(token)}`}`;
      let response: KubeResponse | undefined;
      for (const candidate of token === undefined ? versions : [version]) {
        version = candidate;
        response = await this.#get('list', namespace, `${collectionPath(candidate, namespace)}${query}`, signal);
        // A version the hub does not serve answers 404 with a Status that names no object.
        if (response.status !== 404) break;
      }
      const answer = response!;
      if (answer.status === 410) throw new HubGoneError('the list continue token expired');
      if (answer.status !== 200) throw this.#statusError('list', namespace, answer);
      const body = answer.body as {
        apiVersion?: unknown;
        items?: unknown;
        metadata?: { resourceVersion?: unknown; continue?: unknown };
      } | null;
      if (!Array.isArray(body?.items)) {
        throw new CredentialsError(
          'ERR_FLEET_HUB_REQUEST',
          `the hub ${this.server} answered the list of ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} without items`,
          {
            path: this.server,
          },
        );
      }
      // A list's items may leave apiVersion and kind to the list.
      const items = body.items.map((item: unknown) =>
        isRecord(item) ? { apiVersion: body.apiVersion, kind: 'ClusterProfile', ...item } : item,
      );
      const meta = body.metadata ?? {};
      resourceVersion = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : resourceVersion;
      token = typeof meta.continue === 'string' && meta.continue !== '' ? meta.continue : undefined;
      this.#version = version;
      onPage(items);
    } while (token !== undefined);
    return { resourceVersion, version };
  }

  /** One GET through the seam, as the hub's current identity; network failures are ERR_FLEET_HUB_UNREACHABLE. */
  async #get(verb: HubVerb, namespace: string, path: string, signal: AbortSignal): Promise<KubeResponse> {
    const credential = await this.#credential(verb, namespace);
    if (this.#transport?.credential !== credential) {
      const previous = this.#transport;
      this.#transport = {
        credential,
        transport: createKubeTransport(this.#access.endpoint, credential, {
          retry: KUBE_RETRY,
          ...(this.#options.requestTimeoutMs === undefined ? {} : { timeoutMs: this.#options.requestTimeoutMs }),
        }),
      };
      void previous?.transport.close();
    }
    let response: KubeResponse;
    try {
      response = await this.#transport.transport.send({ method: 'GET', path }, { signal });
    } catch (error) {
      if (signal.aborted) throw error;
      throw this.#unreachable(verb, namespace, error);
    }
    if (response.status === 401) this.#unauthorized(credential);
    return response;
  }

  /**
   * Watches from `resourceVersion` until the stream ends (the server's timeout, a cut connection, silence past the
   * idle deadline: resolves with the number of events seen), `signal` aborts (resolves), the resourceVersion is gone
   * (rejects with {@link HubGoneError}) or the watch cannot be opened (rejects with a coded error). `onEvent` gets
   * each event in order.
   */
  async watch(
    namespace: string,
    resourceVersion: string,
    signal: AbortSignal,
    onEvent: (event: HubWatchEvent) => void,
  ): Promise<number> {
    const version = this.#version ?? CLUSTERPROFILE_VERSIONS[0];
    // Like client-go's reflector: a server-side timeout between 5 and 10 minutes, so watches do not end together.
    const timeoutSeconds = 300 + Math.floor(this.#deps.random() * 300);
    const query = `?watch=1&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=${timeoutSeconds}`;
    const url = new URL(this.#access.endpoint.server.replace(/\/+$/, '') + collectionPath(version, namespace) + query);
    const credential = await this.#credential('watch', namespace);
    const dispatcher = await this.#dispatcher(credential);
    const { request } = await importUndici();
    const idleMs = this.#options.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS;
    const idle = new AbortController();
    let idleTimer: NodeJS.Timeout | undefined;
    const touch = (): void => {
      if (idleTimer !== undefined) clearTimeout(idleTimer);
      idleTimer = setTimeout(() => idle.abort(), idleMs);
      idleTimer.unref();
    };
    const stop = AbortSignal.any([signal, idle.signal]);
    touch();
    try {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (credential.kind === 'token') headers['authorization'] = `Bearer ${credential.token}`;
      let response: Dispatcher.ResponseData;
      for (let attempt = 1; ; attempt += 1) {
        try {
          response = await request(url, { method: 'GET', headers, dispatcher, signal: stop });
          break;
        } catch (error) {
          if (stop.aborted) return 0;
          // A kept-alive connection the hub closed as the request went out (as Go's transport does: once more).
          if (attempt === 1 && isStaleConnection(error)) continue;
          throw this.#unreachable('watch', namespace, error);
        }
      }
      if (response.statusCode !== 200) {
        const text = await readBounded(response.body, 64 * 1024).catch(() => '');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: reported as text.
        }
        if (response.statusCode === 410) throw new HubGoneError('the watch resourceVersion is too old');
        if (response.statusCode === 401) this.#unauthorized(credential);
        throw this.#statusError('watch', namespace, { status: response.statusCode, body });
      }
      const lines = new WatchLines();
      let events = 0;
      try {
        for await (const chunk of response.body) {
          touch();
          const whole = lines.push(chunk as Buffer, (line) => {
            events += 1;
            this.#event(namespace, line, onEvent);
          });
          if (!whole) {
            throw new CredentialsError(
              'ERR_FLEET_HUB_REQUEST',
              `the hub ${this.server} sent a watch event of ${CLUSTERPROFILE_RESOURCE} larger than ${MAX_EVENT_BYTES} bytes`,
              {
                path: this.server,
              },
            );
          }
        }
        return events;
      } catch (error) {
        if (error instanceof HubGoneError || isCredentialsError(error)) throw error;
        // A stream cut after it was open (a hub restart, a proxy, the idle deadline) ends the watch like the
        // server's timeout does: it is reopened from the last resourceVersion.
        return events;
      } finally {
        response.body.destroy();
      }
    } finally {
      if (idleTimer !== undefined) clearTimeout(idleTimer);
    }
  }

  #event(namespace: string, line: string, onEvent: (event: HubWatchEvent) => void): void {
    let event: { type?: unknown; object?: unknown };
    try {
      event = JSON.parse(line) as { type?: unknown; object?: unknown };
    } catch {
      throw new CredentialsError(
        'ERR_FLEET_HUB_REQUEST',
        `the hub ${this.server} sent a watch event of ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} that is not JSON`,
        {
          path: this.server,
        },
      );
    }
    const object = isRecord(event.object) ? event.object : {};
    if (event.type === 'ERROR') {
      if (object['code'] === 410) throw new HubGoneError('the watch resourceVersion is too old');
      throw this.#statusError('watch', namespace, {
        status: typeof object['code'] === 'number' ? object['code'] : 500,
        body: object,
      });
    }
    if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED' || event.type === 'BOOKMARK') {
      onEvent({ type: event.type, object });
    }
  }

  /** The hub identity's credential now: static, or the exec user's (cached, refreshed ahead of expiry). */
  async #credential(verb: HubVerb, namespace: string): Promise<KubeCredential> {
    if (this.#reloadAccess && this.#options.access === undefined) {
      // A 401 with a static credential: read the kubeconfig (or the rotated service-account token) again.
      this.#reloadAccess = false;
      this.#access = await HubConnection.#load(this.#options, this.#deps);
      this.#authenticator = undefined;
    }
    const exec = this.#access.exec;
    if (exec === undefined) return this.#access.credential;
    if (this.#authenticator === undefined) {
      const config = assertDocument<ExecConfig>('exec-config', exec.config, {
        code: 'ERR_KUBECONFIG_INVALID',
        what: `the hub user's exec (${exec.path})`,
      });
      this.#authenticator = new ExecAuthenticator(config, execCluster(this.#access), { env: this.#deps.env });
    }
    let credential: ExecCredential;
    try {
      credential = await this.#authenticator.getCredential();
    } catch (error) {
      throw new CredentialsError(
        'ERR_FLEET_HUB_FORBIDDEN',
        `cannot ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace}: the hub user's exec plugin failed: ${formatError(error)}`,
        {
          path: exec.path,
          cause: error,
        },
      );
    }
    return fromExecCredential(credential);
  }

  #unauthorized(credential: KubeCredential): void {
    if (this.#authenticator !== undefined) {
      const current = this.#authenticator.peek();
      if (current !== undefined && fromExecCredential(current) === credential)
        this.#authenticator.onUnauthorized(current);
    } else {
      this.#reloadAccess = true;
    }
  }

  async #dispatcher(credential: KubeCredential): Promise<Dispatcher> {
    if (this.#agent?.credential === credential) return this.#agent.dispatcher;
    const undici = await importUndici();
    const options = connectionHttpOptions(
      this.#access.endpoint,
      credential.kind === 'certificate' ? { certPem: credential.certificatePem, keyPem: credential.keyPem } : undefined,
    );
    const tls = options.tls;
    const connect = {
      ...(tls.caPem === undefined ? {} : { ca: tls.caPem }),
      ...(tls.certPem === undefined ? {} : { cert: tls.certPem }),
      ...(tls.keyPem === undefined ? {} : { key: tls.keyPem }),
      ...(tls.servername === undefined ? {} : { servername: tls.servername }),
      rejectUnauthorized: tls.insecureSkipVerify !== true,
    };
    const timeouts = { headersTimeout: this.#options.requestTimeoutMs ?? 30_000, bodyTimeout: 0 };
    // Explicit dispatchers: never undici's global one, so no proxy from the environment.
    const dispatcher =
      options.proxy === undefined
        ? new undici.Agent({ connect, ...timeouts })
        : new undici.ProxyAgent({ uri: options.proxy.url, requestTls: connect, ...timeouts });
    const previous = this.#agent;
    this.#agent = { credential, dispatcher };
    void previous?.dispatcher.close().catch(() => undefined);
    return dispatcher;
  }

  #unreachable(verb: HubVerb, namespace: string, error: unknown): CredentialsError {
    const reason = isCredentialsError(error) ? error.message : describeNetworkError(error);
    return new CredentialsError(
      'ERR_FLEET_HUB_UNREACHABLE',
      `cannot ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace}: ${reason}`,
      {
        path: this.server,
        cause: error,
        hint: `check the hub's kubeconfig (${this.source}) and that the API server is up`,
      },
    );
  }

  #statusError(verb: HubVerb, namespace: string, response: KubeResponse): CredentialsError {
    const detail = statusMessage(response.body) ?? `HTTP ${response.status}`;
    if (response.status === 401 || response.status === 403) {
      return new CredentialsError(
        'ERR_FLEET_HUB_FORBIDDEN',
        `the hub ${this.server} refused to ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (HTTP ${response.status}): ${detail}`,
        {
          path: this.server,
          hint:
            response.status === 401
              ? `the hub did not accept the credential of ${this.source}`
              : `grant the hub identity get, list and watch on ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (a Role and RoleBinding)`,
        },
      );
    }
    if (response.status === 404) {
      return new CredentialsError(
        'ERR_FLEET_HUB_REQUEST',
        `the hub ${this.server} cannot ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (HTTP 404): ${detail}`,
        {
          path: this.server,
          hint: `the hub serves no ClusterProfiles (${CLUSTERPROFILE_GROUP} ${CLUSTERPROFILE_VERSIONS.join(' or ')}): is the CRD installed?`,
        },
      );
    }
    return new CredentialsError(
      'ERR_FLEET_HUB_REQUEST',
      `the hub ${this.server} failed to ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (HTTP ${response.status}): ${detail}`,
      {
        path: this.server,
      },
    );
  }

  async close(): Promise<void> {
    const transport = this.#transport;
    const agent = this.#agent;
    this.#transport = undefined;
    this.#agent = undefined;
    await Promise.all([transport?.transport.close(), agent?.dispatcher.destroy().catch(() => undefined)]);
  }
}

function collectionPath(version: string, namespace: string): string {
  return `/apis/${CLUSTERPROFILE_GROUP}/${version}/namespaces/${encodeURIComponent(namespace)}/${CLUSTERPROFILE_PLURAL}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The exec credential as a transport credential; one object per ExecCredential, so identity comparisons work. */
const converted = new WeakMap<ExecCredential, KubeCredential>();
function fromExecCredential(credential: ExecCredential): KubeCredential {
  let result = converted.get(credential);
  if (result === undefined) {
    result =
      credential.clientCertificate !== undefined && credential.clientKey !== undefined
        ? { kind: 'certificate', certificatePem: credential.clientCertificate, keyPem: credential.clientKey }
        : { kind: 'token', token: credential.token ?? '' };
    converted.set(credential, result);
  }
  return result;
}

/** `spec.cluster` for the hub user's exec plugin (used when it asks for cluster info). */
function execCluster(access: KubeAccess): ExecCluster {
  const { endpoint } = access;
  return {
    server: endpoint.server,
    ...(endpoint.caPem === undefined
      ? {}
      : { 'certificate-authority-data': Buffer.from(endpoint.caPem).toString('base64') }),
    ...(endpoint.tlsServerName === undefined ? {} : { 'tls-server-name': endpoint.tlsServerName }),
    ...(endpoint.insecureSkipTlsVerify === true ? { 'insecure-skip-tls-verify': true } : {}),
    ...(endpoint.proxyUrl === undefined ? {} : { 'proxy-url': endpoint.proxyUrl }),
  };
}

async function importUndici(): Promise<typeof import('undici')> {
  const module = await import('undici');
  // A bundler's chunk of the CommonJS undici may offer only `default`.
  const fallback = (module as unknown as { default?: typeof module }).default;
  return typeof module.Agent === 'function' || fallback === undefined ? module : fallback;
}

async function readBounded(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  let text = '';
  for await (const chunk of body) {
    text += (chunk as Buffer).toString('utf8');
    if (text.length > limit) {
      body.destroy();
      break;
    }
  }
  return text.slice(0, limit);
}

/** A request lost on a reused connection the server had closed, before any answer. */
function isStaleConnection(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
}

/** `message (CODE): cause (CODE)` of a network error, without userinfo. */
function describeNetworkError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current instanceof Error && depth < 4; depth += 1) {
    const code = (current as { code?: unknown }).code;
    const part = `${current.message}${typeof code === 'string' ? ` (${code})` : ''}`;
    if (part !== '' && !parts.some((seen) => seen.includes(current instanceof Error ? current.message : '')))
      parts.push(part);
    current = current.cause ?? (current instanceof AggregateError ? current.errors[0] : undefined);
  }
  return withoutUserinfo(parts.join(': ') || String(error));
}
