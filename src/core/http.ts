/**
 * The one HTTP seam under every request builder / response processor pair (the Kubernetes transport, the OpenID
 * Provider client, the tenant-cert issuer client): undici with a per-client trust store, one deadline per send that
 * covers DNS, TCP connect, TLS, the request and the whole answer, one response body limit, one translation of
 * network errors into a classified {@link HttpFailure}, and retries with backoff that never run past the deadline.
 *
 * undici is imported on the first send: modules on a plugin's cache-hit path may import this one for free.
 *
 * @example
 * ```ts
 * const client = createHttpClient({ tls: { caPem }, timeoutMs: 10_000 });
 * try {
 *   const response = await client.send({ method: 'GET', url: 'https://issuer.example/.well-known/openid-configuration' });
 *   response.json; // parsed when the answer says it is JSON
 * } catch (error) {
 *   if (isHttpFailure(error) && error.kind === 'timeout') ...; // map to the caller's own code
 * } finally {
 *   await client.close();
 * }
 * ```
 */
import type { Socket } from 'node:net';
import type { Dispatcher } from 'undici';
import { clip, quoteUrl, redactUrl, withoutUserinfo } from './errors.js';
import { withRetries } from './retry.js';

/** Default deadline of one send (ms), retries included. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Default largest answer read (bytes); more is refused, not buffered. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
  /** An absolute http(s) URL; with `base`, a path and query appended to the base URL's path. */
  url: string | URL;
  base?: string | URL;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Sent as JSON (instead of `body`), with content type `contentType` ?? application/json. */
  json?: unknown;
  /** The content type of `body` or `json`, unless `headers` already set one. */
  contentType?: string;
  /**
   * More strings an error answer must not quote back (the bearer token of an `authorization` header always is):
   * they are replaced by `[REDACTED]` in the body of answers with status 300 and above.
   */
  secrets?: readonly string[];
}

export interface HttpResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  body: Buffer;
  /** The body as UTF-8. */
  text: string;
  /** The parsed body when the content type is JSON (`application/json`, `…+json`) and it parses; else undefined. */
  json: unknown;
  /** The request URL, without userinfo. */
  url: string;
}

/** How the server is verified and who we are to it. */
export interface TlsOptions {
  /** PEM bundle: when given, the only roots trusted (the system roots are not). */
  caPem?: string;
  /** Client certificate and its key (PEM). */
  certPem?: string;
  keyPem?: string;
  /** The name verified in (and sent as SNI for) the server certificate, instead of the URL's host. */
  servername?: string;
  /** Verification off: only when set to true explicitly. */
  insecureSkipVerify?: boolean;
}

/**
 * An explicit proxy: requests go through `url` (an HTTP CONNECT tunnel for https), except to hosts `noProxy`
 * exempts (NO_PROXY syntax). The environment is never read here: callers that honour HTTPS_PROXY pass it in.
 */
export interface ProxyOptions {
  url: string;
  noProxy?: string;
}

export interface HttpRetryPolicy {
  /** At most this many attempts in all. */
  attempts: number;
  /** First backoff (ms), doubling per attempt. */
  baseDelayMs: number;
  maxDelayMs?: number;
  /** Random source for jitter (`delay × (0.5 + r / 2)`); absent: none. */
  jitter?: () => number;
  /** Statuses worth another attempt (default 429 and 5xx); the last answer is returned when attempts run out. */
  retryStatus?: (status: number) => boolean;
}

export interface HttpClientOptions {
  tls?: TlsOptions;
  proxy?: ProxyOptions;
  /** Deadline of one send, retries included (default {@link DEFAULT_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Default {@link DEFAULT_MAX_RESPONSE_BYTES}. */
  maxResponseBytes?: number;
  /** Default: one attempt. Only failures whose {@link HttpFailure.retryable} is true and retryable statuses. */
  retry?: HttpRetryPolicy;
}

export interface HttpSendOptions {
  /** Aborts the send (kind `aborted`). */
  signal?: AbortSignal;
  /** This send's deadline instead of the client's `timeoutMs`. */
  timeoutMs?: number;
  /** An absolute deadline (ms since the epoch); the earlier of it and `timeoutMs` applies. */
  deadline?: number;
}

export interface HttpClient {
  /** Resolves with the answer whatever its status; rejects with an {@link HttpFailure} only. */
  send(request: HttpRequest, options?: HttpSendOptions): Promise<HttpResponse>;
  /** Ends the connections (a connection still being made is torn down, not waited for). */
  close(): Promise<void>;
}

/**
 * - `timeout`: the deadline passed (connect, TLS, or the answer) or a server-side timeout code;
 * - `aborted`: the caller's signal;
 * - `refused` / `dns` / `reset`: the host refused, does not resolve, or dropped the connection;
 * - `certificate`: the server's certificate did not verify; `tls`: any other TLS failure;
 * - `too-large`: the answer is longer than the limit; `proxy`: the proxy refused the tunnel;
 * - `url`: not an http(s) URL; `network`: anything else below HTTP.
 */
export type HttpFailureKind = 'timeout' | 'aborted' | 'refused' | 'dns' | 'reset' | 'certificate' | 'tls' | 'too-large' | 'proxy' | 'url' | 'network';

const RETRYABLE_KINDS: ReadonlySet<HttpFailureKind> = new Set(['timeout', 'refused', 'dns', 'reset', 'network']);

/**
 * A send that got no HTTP answer, classified. Its message and URLs never carry userinfo; callers map it to their
 * own codes and keep it as `cause`.
 */
export class HttpFailure extends Error {
  override readonly name = 'HttpFailure';
  readonly kind: HttpFailureKind;
  /** The lowest-level code seen (`ECONNREFUSED`, `UND_ERR_CONNECT_TIMEOUT`, `DEPTH_ZERO_SELF_SIGNED_CERT`...). */
  readonly code: string | undefined;
  /** The request URL, without userinfo. */
  readonly url: string;
  /** The base URL when the request had one, else the URL; without userinfo. For "cannot reach X" messages. */
  readonly target: string;
  /** Whether another attempt may succeed (timeouts, refused, DNS, reset, other network failures). */
  readonly retryable: boolean;
  /** For `timeout`: the time the send had (ms). For `too-large`: the limit (bytes). */
  readonly timeoutMs: number | undefined;
  readonly limit: number | undefined;

  constructor(
    kind: HttpFailureKind,
    message: string,
    details: { url: string; target: string; code?: string | undefined; cause?: unknown; timeoutMs?: number; limit?: number },
  ) {
    super(withoutUserinfo(message), details.cause === undefined ? undefined : { cause: details.cause });
    this.kind = kind;
    this.code = details.code;
    this.url = clip(redactUrl(details.url));
    this.target = clip(redactUrl(details.target));
    this.retryable = RETRYABLE_KINDS.has(kind);
    this.timeoutMs = details.timeoutMs;
    this.limit = details.limit;
  }
}

/** True for an {@link HttpFailure} from any copy of this package. */
export function isHttpFailure(error: unknown): error is HttpFailure {
  return error instanceof Error && error.name === 'HttpFailure' && typeof (error as { kind?: unknown }).kind === 'string';
}

function targetOf(request: Pick<HttpRequest, 'url' | 'base'>): string {
  return String(request.base ?? request.url);
}

/**
 * Parses an http(s) URL, or throws an {@link HttpFailure} of kind `url` quoting it without userinfo. Synchronous
 * and undici-free: adapters check configured URLs up front with it.
 */
export function parseHttpUrl(value: string | URL, what = 'the URL'): URL {
  const text = String(value);
  let url: URL;
  try {
    url = new URL(text);
  } catch (cause) {
    throw new HttpFailure('url', `${what} ${quoteUrl(text)} is not a URL`, { url: text, target: text, cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new HttpFailure('url', `${what} ${clip(redactUrl(text))} must be https`, { url: text, target: text });
  }
  return url;
}

/** The absolute URL of a request: `url`, or `base` with `url` (path and query) appended to its path. */
export function requestUrl(request: Pick<HttpRequest, 'url' | 'base'>): URL {
  if (request.base === undefined) return parseHttpUrl(request.url);
  const base = parseHttpUrl(request.base);
  const url = new URL(base);
  const [pathname, query] = String(request.url).split('?', 2) as [string, string | undefined];
  url.pathname = base.pathname.replace(/\/+$/, '') + pathname;
  url.search = query === undefined ? '' : `?${query}`;
  return url;
}

// ------------------------------------------------------------------------------------------ error translation

const CERTIFICATE_CODES =
  /^(UNABLE_TO_\w+|CERT_\w+|CRL_\w+|ERROR_IN_CERT_\w+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|INVALID_CA|PATH_LENGTH_EXCEEDED|INVALID_PURPOSE|HOSTNAME_MISMATCH|ERR_TLS_CERT_ALTNAME_INVALID)$/;
const TLS_CODES = /^(ERR_SSL_\w+|ERR_TLS_\w+|EPROTO)$/;
const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME']);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** The error and its causes (and an AggregateError's first member: undici's happy-eyeballs connect). */
function chain(error: unknown): Error[] {
  const seen: Error[] = [];
  let current: unknown = error;
  while (current instanceof Error && seen.length < 5 && !seen.includes(current)) {
    seen.push(current);
    const aggregate = current instanceof AggregateError ? (current.errors[0] as unknown) : undefined;
    current = current.cause ?? aggregate;
  }
  return seen;
}

function codeOf(error: Error): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** `message (CODE): cause message (CODE)`, each part once. */
function describe(errors: Error[], fallback: unknown): string {
  const parts = errors.map((error) => {
    const code = codeOf(error);
    const message = error.message === '' && error instanceof AggregateError ? String((error.errors[0] as Error | undefined)?.message ?? '') : error.message;
    return code === undefined ? message : `${message} (${code})`;
  });
  return parts.filter((part, index) => part !== '' && (index === 0 || !parts[0]!.includes(part))).join(': ') || String(fallback);
}

function classify(errors: Error[]): { kind: HttpFailureKind; code: string | undefined } {
  const codes = errors.map(codeOf).filter((code): code is string => code !== undefined);
  const find = (test: (code: string) => boolean): string | undefined => codes.find(test);
  let code: string | undefined;
  if ((code = find((c) => CERTIFICATE_CODES.test(c))) !== undefined) return { kind: 'certificate', code };
  if ((code = find((c) => TLS_CODES.test(c))) !== undefined) return { kind: 'tls', code };
  if (errors.some((e) => /^(Secure)?ProxyConnectionError$/.test(e.name) || /^Proxy response \(\d+\)/.test(e.message))) {
    return { kind: 'proxy', code: codes[0] };
  }
  if ((code = find((c) => TIMEOUT_CODES.has(c))) !== undefined) return { kind: 'timeout', code };
  if ((code = find((c) => c === 'ECONNREFUSED')) !== undefined) return { kind: 'refused', code };
  if ((code = find((c) => DNS_CODES.has(c))) !== undefined) return { kind: 'dns', code };
  if ((code = find((c) => RESET_CODES.has(c))) !== undefined) return { kind: 'reset', code };
  return { kind: 'network', code: codes.at(-1) };
}

/** The one place where undici's and node's errors become {@link HttpFailure}s. */
function translate(
  error: unknown,
  context: { url: string; target: string; timedOut: boolean; callerSignal: AbortSignal | undefined; budgetMs: number },
): HttpFailure {
  if (isHttpFailure(error)) return error;
  const where = { url: context.url, target: context.target };
  if (context.callerSignal?.aborted === true) {
    const reason: unknown = context.callerSignal.reason;
    const detail = reason instanceof Error ? reason.message : 'aborted';
    return new HttpFailure('aborted', detail, { ...where, cause: reason ?? error });
  }
  if (context.timedOut) {
    return new HttpFailure('timeout', `no answer within ${context.budgetMs} ms`, { ...where, cause: error, timeoutMs: context.budgetMs });
  }
  const errors = chain(error);
  const { kind, code } = classify(errors);
  return new HttpFailure(kind, describe(errors, error), { ...where, code, cause: error, ...(kind === 'timeout' ? { timeoutMs: context.budgetMs } : {}) });
}

// ----------------------------------------------------------------------------------------------- the client

function tlsConnectOptions(tls: TlsOptions = {}): Record<string, unknown> {
  return {
    ...(tls.caPem === undefined ? {} : { ca: tls.caPem }),
    ...(tls.certPem === undefined ? {} : { cert: tls.certPem }),
    ...(tls.keyPem === undefined ? {} : { key: tls.keyPem }),
    ...(tls.servername === undefined ? {} : { servername: tls.servername }),
    rejectUnauthorized: tls.insecureSkipVerify !== true,
  };
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

function bearerOf(headers: Record<string, string>): string | undefined {
  for (const [name, value] of Object.entries(headers)) {
    if (name.toLowerCase() === 'authorization') {
      const match = /^Bearer\s+(\S+)/i.exec(value);
      if (match !== null) return match[1];
    }
  }
  return undefined;
}

/**
 * A client for one server identity: its TLS settings, proxy, deadline, body limit and retry policy. The undici
 * dispatcher behind it (one connection pool) is made on the first send.
 */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const retryStatus = options.retry?.retryStatus ?? ((status: number) => status === 429 || status >= 500);
  /** Deadlines of the sends under way: a new connection may take until the latest of them. */
  const inflight = new Map<symbol, number>();
  /** Sockets still connecting (TCP or TLS): undici does not abort them with the request, so we do. */
  const connecting = new Set<Socket>();
  let loaded: Promise<{ undici: typeof import('undici'); dispatcher: Dispatcher }> | undefined;
  let abandoned = false;

  const connectTimeout = (): number => {
    const latest = inflight.size === 0 ? Date.now() + timeoutMs : Math.max(...inflight.values());
    return Math.max(1, latest - Date.now());
  };

  const dropConnecting = (): void => {
    for (const socket of connecting) socket.destroy(new Error('the send was abandoned (deadline or abort)'));
    connecting.clear();
  };

  async function load(): Promise<{ undici: typeof import('undici'); dispatcher: Dispatcher }> {
    const module = await import('undici');
    // A bundler's chunk of the CommonJS undici may offer only `default`; node's own import offers both.
    type Undici = typeof module;
    const fallback = (module as unknown as { default?: Undici }).default;
    const undici: Undici = typeof module.Agent === 'function' || fallback === undefined ? module : fallback;
    const tls = tlsConnectOptions(options.tls);
    const connect = (connectOptions: Parameters<ReturnType<typeof undici.buildConnector>>[0], callback: Parameters<ReturnType<typeof undici.buildConnector>>[1]): Socket => {
      let done = false;
      const connector = undici.buildConnector({ ...tls, timeout: connectTimeout() });
      const socket = (connector as unknown as (o: typeof connectOptions, cb: typeof callback) => Socket)(connectOptions, (...args) => {
        done = true;
        connecting.delete(socket);
        callback(...args);
      });
      if (!done) connecting.add(socket);
      return socket;
    };
    let dispatcher: Dispatcher;
    if (options.proxy === undefined) {
      dispatcher = new undici.Agent({ connect });
    } else {
      const common = { connectTimeout: timeoutMs, requestTls: tls, proxyTls: { timeout: timeoutMs } };
      dispatcher =
        options.proxy.noProxy === undefined
          ? new undici.ProxyAgent({ uri: options.proxy.url, ...common })
          : // Every value explicit: undici would otherwise read HTTP(S)_PROXY / NO_PROXY from process.env.
            new undici.EnvHttpProxyAgent({ ...common, connect, httpProxy: options.proxy.url, httpsProxy: options.proxy.url, noProxy: options.proxy.noProxy });
    }
    return { undici, dispatcher };
  }

  async function exchange(request: HttpRequest, url: URL, signal: AbortSignal): Promise<HttpResponse> {
    loaded ??= load();
    const { undici, dispatcher } = await loaded;
    const headers: Record<string, string> = { ...request.headers };
    let body: string | Uint8Array | undefined = request.body;
    if (request.json !== undefined) body = JSON.stringify(request.json);
    const hasContentType = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
    if (body !== undefined && !hasContentType && (request.contentType !== undefined || request.json !== undefined)) {
      headers['content-type'] = request.contentType ?? 'application/json';
    }
    const response = await undici.request(url, { method: request.method, headers, dispatcher, signal, ...(body === undefined ? {} : { body }) });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > maxResponseBytes) {
        response.body.destroy();
        throw new HttpFailure('too-large', `the answer is larger than ${maxResponseBytes} bytes`, { url: url.href, target: targetOf(request), limit: maxResponseBytes });
      }
      chunks.push(chunk as Buffer);
    }
    let buffer = Buffer.concat(chunks);
    let text = buffer.toString('utf8');
    if (response.statusCode >= 300) {
      // An error answer is only ever shown to people: never let it carry a credential we sent back into a message
      // (auth proxies and debug endpoints repeat the credential they refused).
      const secrets = [bearerOf(headers), ...(request.secrets ?? [])]
        .filter((secret): secret is string => secret !== undefined && secret !== '')
        .sort((a, b) => b.length - a.length);
      if (secrets.some((secret) => text.includes(secret))) {
        for (const secret of secrets) text = text.replaceAll(secret, '[REDACTED]');
        buffer = Buffer.from(text, 'utf8');
      }
    }
    const responseHeaders: Record<string, string> = {};
    for (const [name, value] of Object.entries(response.headers)) {
      if (value !== undefined) responseHeaders[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    let json: unknown;
    if (JSON_TYPE.test(responseHeaders['content-type'] ?? '')) {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    return { status: response.statusCode, headers: responseHeaders, body: buffer, text, json, url: withoutUserinfo(url.href) };
  }

  /** One attempt, until `deadline`; `budgetMs` (the send's whole time) is what a timeout message names. */
  async function once(request: HttpRequest, url: URL, deadline: number, budgetMs: number, callerSignal: AbortSignal | undefined): Promise<HttpResponse> {
    const allottedMs = Math.max(1, Math.ceil(deadline - Date.now()));
    const timer = AbortSignal.timeout(allottedMs);
    const signal = callerSignal === undefined ? timer : AbortSignal.any([callerSignal, timer]);
    const key = Symbol('send');
    inflight.set(key, Date.now() + allottedMs);
    let onAbort: (() => void) | undefined;
    // undici does not give up a connection being made when the request aborts: the race answers at the deadline.
    const abandon = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const work = exchange(request, url, signal);
    work.catch(() => undefined);
    abandon.catch(() => undefined);
    try {
      return await Promise.race([work, abandon]);
    } catch (error) {
      throw translate(error, { url: url.href, target: targetOf(request), timedOut: timer.aborted, callerSignal, budgetMs });
    } finally {
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
      inflight.delete(key);
      if (signal.aborted) {
        abandoned = true;
        if (inflight.size === 0) dropConnecting();
      }
    }
  }

  return {
    async send(request, sendOptions = {}) {
      const url = requestUrl(request);
      const target = targetOf(request);
      const started = Date.now();
      const budgetMs = Math.max(1, Math.round(Math.min(sendOptions.timeoutMs ?? timeoutMs, (sendOptions.deadline ?? Number.POSITIVE_INFINITY) - started)));
      const deadline = started + budgetMs;
      const signal = sendOptions.signal;
      const retry = options.retry;
      if (retry === undefined || retry.attempts <= 1) return once(request, url, deadline, budgetMs, signal);
      return withRetries<HttpResponse>(() => once(request, url, deadline, budgetMs, signal), {
        attempts: retry.attempts,
        baseDelayMs: retry.baseDelayMs,
        ...(retry.maxDelayMs === undefined ? {} : { maxDelayMs: retry.maxDelayMs }),
        ...(retry.jitter === undefined ? {} : { jitter: retry.jitter }),
        ...(signal === undefined ? {} : { signal }),
        deadline,
        retryable: (error) => isHttpFailure(error) && error.retryable,
        retryResult: (response) => retryStatus(response.status),
        expired: () => new HttpFailure('timeout', `no answer within ${budgetMs} ms`, { url: url.href, target, timeoutMs: budgetMs }),
      });
    },
    async close() {
      dropConnecting();
      const dispatcher = await loaded?.then((ready) => ready.dispatcher).catch(() => undefined);
      if (dispatcher === undefined) return;
      // A send given up on may still be queued behind a connection: destroy rather than wait for it.
      await (abandoned ? dispatcher.destroy() : dispatcher.close()).catch(() => undefined);
    },
  };
}
