/**
 * The one Kubernetes client of this package: an identity found in kubectl's order (src/kube/kubeconfig-loader.ts) →
 * an authenticated keep-alive connection (src/kube/transport.ts over the HTTP seam) → requests and watch streams.
 * Every caller that talks to an API server (the token-request plugin, the issuer's state, signer and Tenant
 * reconciler, the fleet's hub, the CLI's hub and provider cluster, token sync) goes through it, so a rotated
 * credential is picked up one way everywhere:
 *
 * - static credentials (a token or client certificate handed over, or none) are used as they are;
 * - an identity read from files (a kubeconfig — its `token`, `tokenFile`, client certificate and key files — or the
 *   pod's service-account token) is read again when it is older than {@link DEFAULT_REREAD_MS}, as client-go's cached
 *   file token source does, and at once after a 401 (the request is then sent once more, with what was read);
 * - an exec user runs through the exec authenticator (src/exec): its credential is refreshed ahead of expiry, and a
 *   401 drops it (`onUnauthorized`), runs the plugin again and sends the request once more.
 *
 * The transport (its kept-alive connections) is re-made only when the endpoint or credential changed; the one it
 * replaces is closed when its last request (a watch may be one) ends. Errors are the transport's (`ERR_KUBE_*`), the
 * exec plugin's (`ERR_EXEC_*`) and, for an exec config that is not one, `ERR_KUBECONFIG_INVALID`: callers map them to
 * their own codes. HTTP statuses are returned, never thrown.
 *
 * @example
 * ```ts
 * const kube = await KubeClient.load({ kubeconfig: args.kubeconfig, flag: '--kubeconfig' }, { env, cwd });
 * const response = await kube.send({ method: 'GET', path: '/version' });
 * await kube.close();
 * ```
 */
import { withoutUserinfo } from '../base/errors.js';
import type { ExecCluster, ExecConfig } from '../base/exec-credential.js';
import { monotonicMs } from '../base/io.js';
import type { ExecAuthenticator, ExecAuthenticatorOptions } from '../exec/authenticator.js';
import type { ExecCredential } from '../exec/output.js';
import { loadKubeAccess, type KubeAccess, type KubeAccessDeps, type KubeAccessOptions } from './kubeconfig-loader.js';
import { createKubeTransport, type KubeTransportOptions } from './transport.js';
import type { KubeCredential, KubeEndpoint, KubeRequest, KubeResponse, SendKubeRequest } from './types.js';

/** An identity read from files is read again when it is older than this (client-go's file token source: 1 min). */
export const DEFAULT_REREAD_MS = 60_000;

export interface KubeClientOptions extends KubeTransportOptions {
  /** Default {@link DEFAULT_REREAD_MS}. */
  rereadMs?: number;
  /** How an exec user's plugin runs (environment, stderr, policy, timeout). */
  exec?: ExecAuthenticatorOptions;
  /** Milliseconds on a monotonic clock, for the re-read age; default the process's. */
  now?: () => number;
}

/** Options of one request. */
export interface KubeSendOptions {
  signal?: AbortSignal;
  /** This request's deadline instead of the client's. */
  timeoutMs?: number;
}

/** Options of one streamed GET (a watch). */
export interface KubeStreamOptions {
  signal: AbortSignal;
  /** Deadline of the whole stream (it should outlast the watch's server-side timeout). */
  timeoutMs: number;
  /** A stream that sends nothing for this long is ended (the answer resolves `idle: true`). */
  idleMs: number;
}

/** How a streamed GET ended: its answer (a 2xx answer's body went to `onChunk`), or cut. */
export type KubeStreamEnd =
  | { kind: 'answer'; response: KubeResponse }
  /** Silent past the idle deadline, or the connection was cut after the stream opened. */
  | { kind: 'cut'; idle: boolean; error?: unknown };

type Transport = ReturnType<typeof createKubeTransport>;

interface TransportEntry {
  endpoint: KubeEndpoint;
  credential: KubeCredential;
  key: string;
  transport: Transport;
  /** The same without retries, for streams; made on the first. */
  streaming?: Transport;
  users: number;
  retired: boolean;
}

/** What a request was sent with, to judge its 401. */
interface Used {
  entry: TransportEntry;
  exec: ExecCredential | undefined;
}

/**
 * An authenticated connection to one API server. Make it with {@link KubeClient.load} (kubectl's order),
 * {@link KubeClient.fromAccess} (access already loaded, with the way to load it again) or {@link KubeClient.static}.
 */
export class KubeClient {
  #access: KubeAccess;
  readonly #reload: (() => Promise<KubeAccess>) | undefined;
  readonly #options: KubeClientOptions;
  readonly #now: () => number;
  #loadedAt: number;
  #reloading: Promise<void> | undefined;
  #authenticator: Promise<ExecAuthenticator> | undefined;
  #current: TransportEntry | undefined;

  private constructor(access: KubeAccess, reload: (() => Promise<KubeAccess>) | undefined, options: KubeClientOptions) {
    this.#access = access;
    this.#reload = reload;
    this.#options = options;
    this.#now = options.now ?? monotonicMs;
    this.#loadedAt = this.#now();
  }

  /** The identity found in kubectl's order (errors: the loader's `ERR_KUBECONFIG_*`, `ERR_IN_CLUSTER_UNAVAILABLE`). */
  static async load(
    accessOptions: KubeAccessOptions,
    deps: KubeAccessDeps,
    options: KubeClientOptions = {},
  ): Promise<KubeClient> {
    const load = () => loadKubeAccess(accessOptions, deps);
    return new KubeClient(await load(), load, options);
  }

  /** Access already loaded; `reload` reads it again (files rotate); without it the credential is static. */
  static fromAccess(
    access: KubeAccess,
    reload: (() => Promise<KubeAccess>) | undefined,
    options: KubeClientOptions = {},
  ): KubeClient {
    return new KubeClient(access, reload, options);
  }

  /** One endpoint and one credential that never change (a token minted for the purpose, a tenant-cert identity). */
  static static(
    endpoint: KubeEndpoint,
    credential: KubeCredential,
    options: KubeClientOptions & { source?: string } = {},
  ): KubeClient {
    return new KubeClient(
      { endpoint, credential, namespace: undefined, source: options.source ?? 'the given credential', origin: 'flag' },
      undefined,
      options,
    );
  }

  /** The API server URL without userinfo, for messages. */
  get server(): string {
    return withoutUserinfo(this.#access.endpoint.server);
  }

  /** Where the identity came from (`context "hub" of /path`, `in-cluster service account`), for messages. */
  get source(): string {
    return this.#access.source;
  }

  /** The access as last read (endpoint, namespace, origin). */
  get access(): KubeAccess {
    return this.#access;
  }

  /** Sends one request; a 401 gets the credential again and one more attempt. Arrow: callers pass `client.send`. */
  readonly send = (request: KubeRequest, options: KubeSendOptions = {}): Promise<KubeResponse> =>
    this.#send(request, options, false);

  /**
   * A GET whose 2xx answer streams to `onChunk` (a watch), ended early when it is silent for `idleMs`; never retried
   * after it opened (a stream cannot be resumed by the seam), see {@link streamOver}.
   */
  stream(path: string, onChunk: (chunk: Buffer) => void, options: KubeStreamOptions): Promise<KubeStreamEnd> {
    return streamOver((request, sendOptions) => this.#send(request, sendOptions ?? {}, true), path, onChunk, options);
  }

  async #send(request: KubeRequest, options: KubeSendOptions, streaming: boolean): Promise<KubeResponse> {
    const sendOptions = {
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    };
    const first = await this.#acquire();
    let response: KubeResponse;
    try {
      response = await this.#transportOf(first.entry, streaming).send(request, sendOptions);
    } finally {
      this.#release(first.entry);
    }
    if (response.status !== 401 || options.signal?.aborted === true) return response;
    const second = await this.#afterUnauthorized(first);
    if (second === undefined) return response;
    try {
      return await this.#transportOf(second.entry, streaming).send(request, sendOptions);
    } finally {
      this.#release(second.entry);
    }
  }

  /** Streams go through a transport of their own without retries: a retried stream would hand chunks over twice. */
  #transportOf(entry: TransportEntry, streaming: boolean): Transport {
    if (!streaming || this.#options.retry === undefined) return entry.transport;
    entry.streaming ??= createKubeTransport(entry.endpoint, entry.credential, { ...this.#options, retry: undefined });
    return entry.streaming;
  }

  /**
   * Gets the credential now (an exec user's plugin runs, files due are read again), so that its failures (`ERR_EXEC_*`,
   * `ERR_KUBECONFIG_INVALID`) are told apart from a request's.
   */
  async authenticate(): Promise<void> {
    const used = await this.#acquire();
    this.#release(used.entry);
  }

  /** Ends the connections (a request still under way fails); a later request opens new ones. */
  async close(): Promise<void> {
    await this.#reloading;
    const current = this.#current;
    this.#current = undefined;
    if (current !== undefined) await Promise.all([current.transport.close(), current.streaming?.close()]);
  }

  /** The transport for the credential now, counted as in use until {@link release}. */
  async #acquire(): Promise<Used> {
    let exec: ExecCredential | undefined;
    let credential: KubeCredential;
    if (this.#access.exec !== undefined) {
      const authenticator = await this.#execAuthenticator();
      exec = await authenticator.getCredential();
      credential = credentialFromExec(exec);
    } else {
      if (this.#reload !== undefined && this.#now() - this.#loadedAt >= (this.#options.rereadMs ?? DEFAULT_REREAD_MS))
        await this.#read();
      credential = this.#access.credential;
    }
    const entry = this.#entry(this.#access.endpoint, credential);
    entry.users += 1;
    return { entry, exec };
  }

  #release(entry: TransportEntry): void {
    entry.users -= 1;
    if (entry.retired && entry.users === 0) closeEntry(entry);
  }

  /** After a 401: a new credential to try once, or undefined when there is none (the 401 stands). */
  async #afterUnauthorized(used: Used): Promise<Used | undefined> {
    if (used.exec !== undefined) {
      (await this.#execAuthenticator()).onUnauthorized(used.exec);
    } else {
      if (this.#reload === undefined) return undefined;
      // Read again unless another request already did since this one was sent.
      if (this.#current === used.entry) await this.#read();
    }
    const next = await this.#acquire();
    if (next.entry === used.entry) {
      this.#release(next.entry);
      return undefined;
    }
    return next;
  }

  /**
   * Reads the credential again (one read at a time); a failed read keeps what was read before. Only the credential is
   * taken, as client-go re-reads only token and certificate files: the server a client was made for stays its server.
   */
  #read(): Promise<void> {
    this.#reloading ??= (async () => {
      this.#loadedAt = this.#now();
      try {
        const next = await this.#reload!();
        if (next.exec === undefined) this.#access = { ...this.#access, credential: next.credential };
      } catch {
        // A file being replaced, a kubeconfig being edited: the credential read before stays, read again later.
      } finally {
        this.#reloading = undefined;
      }
    })();
    return this.#reloading;
  }

  /** The transport for `endpoint` and `credential`: the current one when they did not change, else a new one. */
  #entry(endpoint: KubeEndpoint, credential: KubeCredential): TransportEntry {
    const current = this.#current;
    if (current !== undefined && current.endpoint === endpoint && current.credential === credential) return current;
    const key = JSON.stringify([endpoint, credential]);
    if (current !== undefined && current.key === key) {
      current.endpoint = endpoint;
      current.credential = credential;
      return current;
    }
    const entry: TransportEntry = {
      endpoint,
      credential,
      key,
      transport: createKubeTransport(endpoint, credential, this.#options),
      users: 0,
      retired: false,
    };
    this.#current = entry;
    if (current !== undefined) {
      current.retired = true;
      if (current.users === 0) closeEntry(current);
    }
    return entry;
  }

  #execAuthenticator(): Promise<ExecAuthenticator> {
    this.#authenticator ??= (async () => {
      const exec = this.#access.exec!;
      // Loaded only for exec users: a static identity (a plugin's bootstrap) never parses the exec runner.
      const [{ ExecAuthenticator }, { assertDocument }] = await Promise.all([
        import('../exec/authenticator.js'),
        import('../schemas/index.js'),
      ]);
      const config = assertDocument<ExecConfig>('exec-config', exec.config, {
        code: 'ERR_KUBECONFIG_INVALID',
        what: `the user's exec (${exec.path})`,
      });
      return new ExecAuthenticator(config, execClusterOf(this.#access.endpoint), this.#options.exec ?? {});
    })();
    // A config that is not one is reported on each request, not cached as a failure.
    this.#authenticator.catch(() => {
      this.#authenticator = undefined;
    });
    return this.#authenticator;
  }
}

function closeEntry(entry: TransportEntry): void {
  void entry.transport.close();
  void entry.streaming?.close();
}

/**
 * A GET over `send` whose 2xx answer streams to `onChunk`, ended early when nothing arrives for `idleMs` (the API
 * server sends a bookmark about once a minute, so a silent watch is a dead one). A kept-alive connection the server
 * had closed as the request went out is tried once more on a new one (as Go's transport does). Resolves with the
 * answer, or `cut` when the stream was silent past `idleMs` or broke after it opened; rejects when it could not be
 * opened (`ERR_KUBE_*`) or `signal` aborted it.
 */
export async function streamOver(
  send: SendKubeRequest,
  path: string,
  onChunk: (chunk: Buffer) => void,
  options: KubeStreamOptions,
): Promise<KubeStreamEnd> {
  const idle = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let opened = false;
  const touch = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => idle.abort(), options.idleMs);
    timer.unref();
  };
  const signal = AbortSignal.any([options.signal, idle.signal]);
  const request: KubeRequest = {
    method: 'GET',
    path,
    onChunk: (chunk) => {
      opened = true;
      touch();
      onChunk(chunk);
    },
  };
  touch();
  try {
    for (let attempt = 1; ; attempt += 1) {
      try {
        const response = await send(request, { signal, timeoutMs: options.timeoutMs });
        return { kind: 'answer', response };
      } catch (error) {
        if (options.signal.aborted) throw error;
        if (idle.signal.aborted) return { kind: 'cut', idle: true };
        if (opened) return { kind: 'cut', idle: false, error };
        if (attempt === 1 && isStaleConnection(error)) continue;
        throw error;
      }
    }
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** The exec credential as a transport credential; one object per ExecCredential, so identity comparisons work. */
const converted = new WeakMap<ExecCredential, KubeCredential>();
export function credentialFromExec(credential: ExecCredential): KubeCredential {
  let result = converted.get(credential);
  if (result === undefined) {
    result =
      credential.clientCertificate !== undefined && credential.clientKey !== undefined
        ? { kind: 'certificate', certificatePem: credential.clientCertificate, keyPem: credential.clientKey }
        : credential.token !== undefined
          ? { kind: 'token', token: credential.token }
          : { kind: 'none' };
    converted.set(credential, result);
  }
  return result;
}

/** `spec.cluster` for an exec plugin that asks for cluster info: the endpoint in kubeconfig form. */
export function execClusterOf(endpoint: KubeEndpoint): ExecCluster {
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

/** A request lost on a kept-alive connection the server had closed, before any answer (reset, or closed early). */
function isStaleConnection(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | null)?.cause;
  const kind = (cause as { kind?: unknown } | null)?.kind;
  return kind === 'reset' || kind === 'network';
}
