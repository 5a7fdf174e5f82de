/**
 * The one HTTP seam under every request builder / response processor pair (the Kubernetes transport, the OpenID
 * Provider client, the tenant-cert issuer client): HTTP/1.1 (`http1.ts`) over sockets it makes itself (TCP, TLS with
 * a per-client trust store, an HTTP CONNECT or SOCKS5 tunnel), kept alive per client; one deadline per send that
 * covers DNS, TCP connect, TLS, the request and the whole answer; one response body limit; one translation of network
 * errors into a classified {@link HttpFailure}; and retries with backoff that never run past the deadline.
 *
 * Built-ins are taken on the first send: modules on a plugin's cache-hit path may import this one for free. (undici,
 * used here before, cost a cache miss 40-60 ms and 25 MiB to load; node:http after it, 1 MiB of peak RSS and ~7 ms of
 * a token-request miss.)
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
import { clip, quoteUrl, redactUrl, withoutUserinfo } from './errors.js';
import { type AnswerHandlers, AnswerReader, headLength, parseStatusLine, requestHead } from './http/http1.js';
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
  /**
   * Streams a 2xx answer: each chunk of its body goes to this function as it arrives, nothing is buffered (the
   * answer's `body` is then empty and `maxResponseBytes` does not apply: the receiver bounds what it keeps). For
   * long-lived answers such as a Kubernetes watch; other statuses are read as usual.
   */
  onChunk?: (chunk: Buffer) => void;
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
 * An explicit proxy: requests go through `url` — `http://` or `https://` (a CONNECT tunnel for https targets, the
 * absolute URL for http ones; userinfo becomes Proxy-Authorization) or `socks5://` (`socks://`, `socks5h://`; the
 * host name is resolved by the proxy) — except to hosts `noProxy` exempts (NO_PROXY syntax: `*`, names and their
 * subdomains, `.suffix`, `*.suffix`, optional `:port`). The environment is never read here: callers that honour
 * HTTPS_PROXY pass it in.
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
export type HttpFailureKind =
  | 'timeout'
  | 'aborted'
  | 'refused'
  | 'dns'
  | 'reset'
  | 'certificate'
  | 'tls'
  | 'too-large'
  | 'proxy'
  | 'url'
  | 'network';

const RETRYABLE_KINDS: ReadonlySet<HttpFailureKind> = new Set(['timeout', 'refused', 'dns', 'reset', 'network']);

/**
 * A send that got no HTTP answer, classified. Its message and URLs never carry userinfo; callers map it to their
 * own codes and keep it as `cause`.
 */
export class HttpFailure extends Error {
  override readonly name = 'HttpFailure';
  readonly kind: HttpFailureKind;
  /** The lowest-level code seen (`ECONNREFUSED`, `ETIMEDOUT`, `DEPTH_ZERO_SELF_SIGNED_CERT`...). */
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
    details: {
      url: string;
      target: string;
      code?: string | undefined;
      cause?: unknown;
      timeoutMs?: number;
      limit?: number;
    },
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
  return (
    error instanceof Error && error.name === 'HttpFailure' && typeof (error as { kind?: unknown }).kind === 'string'
  );
}

function targetOf(request: Pick<HttpRequest, 'url' | 'base'>): string {
  return String(request.base ?? request.url);
}

/**
 * Parses an http(s) URL, or throws an {@link HttpFailure} of kind `url` quoting it without userinfo. Synchronous
 * and free of any network code: adapters check configured URLs up front with it.
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
const TIMEOUT_CODES = new Set(['ETIMEDOUT']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME']);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** The error and its causes (and an AggregateError's first member: a happy-eyeballs connect). */
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
    const message =
      error.message === '' && error instanceof AggregateError
        ? String((error.errors[0] as Error | undefined)?.message ?? '')
        : error.message;
    return code === undefined ? message : `${message} (${code})`;
  });
  return (
    parts.filter((part, index) => part !== '' && (index === 0 || !parts[0]!.includes(part))).join(': ') ||
    String(fallback)
  );
}

function classify(errors: Error[]): { kind: HttpFailureKind; code: string | undefined } {
  const codes = errors.map(codeOf).filter((code): code is string => code !== undefined);
  const byCode = (kinds: readonly (readonly [HttpFailureKind, (code: string) => boolean])[]) => {
    for (const [kind, test] of kinds) {
      const code = codes.find(test);
      if (code !== undefined) return { kind, code };
    }
    return undefined;
  };
  const tls = byCode([
    ['certificate', (c) => CERTIFICATE_CODES.test(c)],
    ['tls', (c) => TLS_CODES.test(c)],
  ]);
  if (tls !== undefined) return tls;
  if (errors.some((e) => /^(Secure)?ProxyConnectionError$/.test(e.name) || /^Proxy response \(\d+\)/.test(e.message))) {
    return { kind: 'proxy', code: codes[0] };
  }
  return (
    byCode([
      ['timeout', (c) => TIMEOUT_CODES.has(c)],
      ['refused', (c) => c === 'ECONNREFUSED'],
      ['dns', (c) => DNS_CODES.has(c)],
      ['reset', (c) => RESET_CODES.has(c)],
    ]) ?? { kind: 'network', code: codes.at(-1) }
  );
}

/** The one place where node's errors become {@link HttpFailure}s. */
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
    return new HttpFailure('timeout', `no answer within ${context.budgetMs} ms`, {
      ...where,
      cause: error,
      timeoutMs: context.budgetMs,
    });
  }
  const errors = chain(error);
  const { kind, code } = classify(errors);
  return new HttpFailure(kind, describe(errors, error), {
    ...where,
    code,
    cause: error,
    ...(kind === 'timeout' ? { timeoutMs: context.budgetMs } : {}),
  });
}

// ----------------------------------------------------------------------------------------------- connections

/** How a request reaches its origin: directly, through an HTTP(S) proxy, or through a SOCKS5 proxy. */
type Route = { kind: 'direct' } | { kind: 'http-proxy' | 'socks'; proxy: URL; authorization: string | undefined };

const DEFAULT_PORTS: Record<string, number> = {
  'http:': 80,
  'https:': 443,
  'socks:': 1080,
  'socks5:': 1080,
  'socks5h:': 1080,
};

interface NoProxyEntry {
  hostname: string;
  port: number;
  wildcard: boolean;
}

/** NO_PROXY entries: comma or space separated `host`, `.suffix`, `*.suffix`, `host:port`, `[v6]:port`, `*`. */
function parseNoProxy(value: string): NoProxyEntry[] {
  return value
    .split(/[,\s]/)
    .filter((entry) => entry !== '')
    .map((entry) => {
      const bracketed = /^\[(.+)\]:(\d+)$/.exec(entry);
      let hostname: string;
      let port = 0;
      if (bracketed !== null) {
        hostname = bracketed[1]!;
        port = Number(bracketed[2]);
      } else {
        const unbracketed = entry.replace(/^\[(.+)\]$/, '$1');
        const withPort = (unbracketed.match(/:/g) ?? []).length === 1 ? /^(.+):(\d+)$/.exec(unbracketed) : null;
        hostname = withPort === null ? unbracketed : withPort[1]!;
        port = withPort === null ? 0 : Number(withPort[2]);
      }
      return {
        hostname: hostname
          .replace(/^\*?\./, '')
          .replace(/^(.+)\.$/, '$1')
          .toLowerCase(),
        port,
        wildcard: entry.startsWith('*'),
      };
    });
}

/** Whether NO_PROXY exempts `url`: `*`, the host itself (not for `*.` entries), or a subdomain of an entry. */
function exempt(entries: readonly NoProxyEntry[], url: URL): boolean {
  let hostname = url.hostname.replace(/^\[(.+)\]$/, '$1').toLowerCase();
  if (hostname.length > 1 && hostname.endsWith('.')) hostname = hostname.slice(0, -1);
  const port = Number(url.port) || DEFAULT_PORTS[url.protocol] || 0;
  return entries.some(
    (entry) =>
      (entry.port === 0 || entry.port === port) &&
      (entry.hostname === '*' ||
        (!entry.wildcard && hostname === entry.hostname) ||
        hostname.endsWith(`.${entry.hostname}`)),
  );
}

function proxyError(message: string, cause?: unknown): Error {
  const error = new Error(message, cause === undefined ? undefined : { cause });
  error.name = 'ProxyConnectionError';
  return error;
}

/**
 * Reads one message from a socket: `take` looks at what has arrived and says how many bytes the message is (undefined:
 * not complete yet; an Error: refuse it). The bytes after the message are pushed back and the socket is left paused
 * for whoever reads next (the TLS layer, or the next step of a proxy handshake).
 */
function readMessage(
  socket: Socket,
  take: (buffered: Buffer) => number | Error | undefined,
  closed: string,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const cleanup = (): void => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    const onClose = (): void => onError(proxyError(closed));
    const onData = (chunk: Buffer): void => {
      buffered = Buffer.concat([buffered, chunk]);
      const length = take(buffered);
      if (length === undefined) return;
      if (length instanceof Error) {
        onError(length);
        return;
      }
      cleanup();
      socket.pause();
      if (buffered.length > length) socket.unshift(buffered.subarray(length));
      resolve(buffered.subarray(0, length));
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.resume();
  });
}

/** Reads an HTTP response head (up to the blank line) from a socket; the bytes after it are pushed back. */
async function readResponseHead(socket: Socket): Promise<{ status: number }> {
  const head = await readMessage(
    socket,
    (buffered) => {
      try {
        return headLength(buffered);
      } catch {
        return proxyError('the proxy answered CONNECT with an endless header');
      }
    },
    'the proxy closed the connection during CONNECT',
  );
  const status = parseStatusLine(head.toString('latin1').split('\r\n', 1)[0]!);
  if (status === undefined) throw proxyError('the proxy answered CONNECT with something other than HTTP');
  return { status: status.status };
}

/** Reads exactly `length` bytes (SOCKS5 replies). */
function readBytes(socket: Socket, length: number): Promise<Buffer> {
  return readMessage(
    socket,
    (buffered) => (buffered.length >= length ? length : undefined),
    'the SOCKS proxy closed the connection',
  );
}

const SOCKS_REPLIES: Record<number, string> = {
  1: 'general failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

/** RFC 1928 CONNECT (with RFC 1929 username/password when the proxy URL has them) to `host:port`. */
async function socksConnect(socket: Socket, proxy: URL, host: string, port: number): Promise<void> {
  const username = decodeURIComponent(proxy.username);
  const password = decodeURIComponent(proxy.password);
  const withPassword = username !== '' || password !== '';
  socket.write(Buffer.from(withPassword ? [5, 2, 0, 2] : [5, 1, 0]));
  const [version, method] = await readBytes(socket, 2);
  if (version !== 5) throw proxyError('the proxy does not speak SOCKS5');
  if (method === 2 && withPassword) {
    const user = Buffer.from(username);
    const pass = Buffer.from(password);
    socket.write(Buffer.concat([Buffer.from([1, user.length]), user, Buffer.from([pass.length]), pass]));
    const [, status] = await readBytes(socket, 2);
    if (status !== 0) throw proxyError('the SOCKS proxy refused the username and password');
  } else if (method !== 0) {
    throw proxyError(
      withPassword
        ? 'the SOCKS proxy accepts no authentication we offer'
        : 'the SOCKS proxy wants a username and password',
    );
  }
  const { isIP } = process.getBuiltinModule('node:net');
  const family = isIP(host);
  let address: Buffer;
  if (family === 4) {
    address = Buffer.from([1, ...host.split('.').map(Number)]);
  } else if (family === 6) {
    address = Buffer.concat([Buffer.from([4]), ipv6Bytes(host)]);
  } else {
    const name = Buffer.from(host);
    address = Buffer.concat([Buffer.from([3, name.length]), name]);
  }
  const portBytes = Buffer.from([port >> 8, port & 0xff]);
  socket.write(Buffer.concat([Buffer.from([5, 1, 0]), address, portBytes]));
  const reply = await readBytes(socket, 4);
  if (reply[1] !== 0)
    throw proxyError(`the SOCKS proxy could not connect: ${SOCKS_REPLIES[reply[1]!] ?? `reply ${reply[1]}`}`);
  const boundLength = reply[3] === 1 ? 4 : reply[3] === 4 ? 16 : (await readBytes(socket, 1))[0]!;
  await readBytes(socket, boundLength + 2);
}

/** The 16 bytes of an IPv6 address. */
function ipv6Bytes(address: string): Buffer {
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const words = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((word) => (word.includes('.') ? ipv4Words(word) : [Number.parseInt(word, 16)]));
  const front = words(head);
  const back = tail === undefined ? [] : words(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const bytes = Buffer.alloc(16);
  for (const [index, word] of all.entries()) bytes.writeUInt16BE(word, index * 2);
  return bytes;
}

function ipv4Words(dotted: string): number[] {
  const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
  return [(a << 8) | b, (c << 8) | d];
}

// ----------------------------------------------------------------------------------------------- the client

interface TlsConnectOptions {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
  rejectUnauthorized: boolean;
}

function tlsConnectOptions(tls: TlsOptions = {}): TlsConnectOptions {
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

function proxyAuthorization(proxy: URL): string | undefined {
  if (proxy.username === '' && proxy.password === '') return undefined;
  return `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}`;
}

/** `host` of a URL for connecting: without the brackets of an IPv6 literal. */
const connectHost = (url: URL): string => url.hostname.replace(/^\[(.+)\]$/, '$1');
const portOf = (url: URL): number => Number(url.port) || DEFAULT_PORTS[url.protocol]!;

/**
 * A client for one server identity: its TLS settings, proxy, deadline, body limit and retry policy. Its connections
 * (one keep-alive pool per origin, any number of connections) are made on the first send; HTTP/1.1 over them is
 * `http1.ts`.
 */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const retryStatus = options.retry?.retryStatus ?? ((status: number) => status === 429 || status >= 500);
  const tls = tlsConnectOptions(options.tls);
  /** Deadlines of the sends under way: a new connection may take until the latest of them. */
  const inflight = new Map<symbol, number>();
  /** Sockets still connecting (TCP, proxy tunnel or TLS): torn down when every send waiting for them gave up. */
  const connecting = new Set<Socket>();
  /** Kept-alive connections waiting for a request, per origin, each with the function that takes it out. */
  const idle = new Map<string, Map<Socket, () => void>>();
  /** Every connection made and not closed yet (close() ends them all). */
  const open = new Set<Socket>();
  const noProxy = parseNoProxy(options.proxy?.noProxy ?? '');

  /**
   * How long a new connection may take: until the latest deadline of the sends under way, plus a second. Sends end
   * themselves at their deadline (and drop what still connects); this only keeps a connection nobody waits for from
   * lingering.
   */
  const connectTimeout = (): number => {
    const latest = inflight.size === 0 ? Date.now() + timeoutMs : Math.max(...inflight.values());
    return Math.max(1, latest - Date.now()) + 1000;
  };

  const dropConnecting = (): void => {
    for (const socket of connecting) socket.destroy(new Error('the send was abandoned (deadline or abort)'));
    connecting.clear();
  };

  /** The route to `url`; a bad proxy URL is the failure of the send that needs it. */
  function routeFor(url: URL): Route {
    if (options.proxy === undefined || exempt(noProxy, url)) return { kind: 'direct' };
    let proxyUrl: URL;
    try {
      proxyUrl = new URL(options.proxy.url);
    } catch (cause) {
      throw new HttpFailure('url', `the proxy URL ${JSON.stringify(withoutUserinfo(options.proxy.url))} is not a URL`, {
        url: url.href,
        target: url.href,
        cause,
      });
    }
    if (/^socks5?h?:$/.test(proxyUrl.protocol)) return { kind: 'socks', proxy: proxyUrl, authorization: undefined };
    if (proxyUrl.protocol !== 'http:' && proxyUrl.protocol !== 'https:') {
      throw new HttpFailure(
        'url',
        `the proxy URL ${withoutUserinfo(options.proxy.url)} must be http, https or socks5`,
        { url: url.href, target: url.href },
      );
    }
    return { kind: 'http-proxy', proxy: proxyUrl, authorization: proxyAuthorization(proxyUrl) };
  }

  /** Counts `socket` as connecting until `event` (or its end), and ends it when the connect deadline passes first. */
  function connectWithin<T extends Socket>(socket: T, event: 'connect' | 'secureConnect'): T {
    connecting.add(socket);
    const timer = setTimeout(
      () => socket.destroy(Object.assign(new Error('no connection within the deadline'), { code: 'ETIMEDOUT' })),
      connectTimeout(),
    );
    const done = (): void => {
      clearTimeout(timer);
      connecting.delete(socket);
    };
    socket.once(event, done);
    socket.once('close', done);
    return socket;
  }

  /** TLS to `origin` as configured (trusted CAs, client certificate, server name), over `socket` when given. */
  function secureTo(origin: URL, socket?: Socket): Socket {
    const { isIP } = process.getBuiltinModule('node:net');
    const { connect } = process.getBuiltinModule('node:tls');
    const host = connectHost(origin);
    // SNI and the name verified: the configured server name, else the URL's host (an IP is verified, not sent).
    const servername = tls.servername ?? (isIP(host) === 0 ? host : undefined);
    const secured = connect({
      host,
      port: portOf(origin),
      ...(socket === undefined ? {} : { socket }),
      ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      ...(tls.cert === undefined ? {} : { cert: tls.cert }),
      ...(tls.key === undefined ? {} : { key: tls.key }),
      ...(servername === undefined ? {} : { servername }),
      rejectUnauthorized: tls.rejectUnauthorized,
    });
    return secured.setNoDelay(true);
  }

  /**
   * A socket to `origin` (TLS for https) along `route`. A direct one is returned at once, still connecting (what is
   * written waits for the connection), so the caller can listen for its errors at once; a tunnel when it is through.
   */
  function openSocket(origin: URL, route: Route): Socket | Promise<Socket> {
    const net = process.getBuiltinModule('node:net');
    const secure = origin.protocol === 'https:';
    if (route.kind === 'direct') {
      return secure
        ? connectWithin(secureTo(origin), 'secureConnect')
        : connectWithin(net.connect({ host: connectHost(origin), port: portOf(origin), noDelay: true }), 'connect');
    }
    // Through a proxy: a connection to it (TLS with the system roots for an https:// proxy), the tunnel, then TLS to
    // the origin inside it.
    const proxyHost = connectHost(route.proxy);
    const overTls = route.proxy.protocol === 'https:';
    const toProxy: Socket = overTls
      ? process.getBuiltinModule('node:tls').connect({
          host: proxyHost,
          port: portOf(route.proxy),
          ...(net.isIP(proxyHost) === 0 ? { servername: proxyHost } : {}),
        })
      : net.connect({ host: proxyHost, port: portOf(route.proxy), noDelay: true });
    // Its errors reach whoever reads it (the tunnel's steps, then the TLS socket over it); none may go uncaught.
    toProxy.on('error', () => undefined);
    // Connecting lasts until the tunnel is through: one deadline for the proxy connection and the tunnel.
    connecting.add(toProxy);
    const timer = setTimeout(
      () =>
        toProxy.destroy(
          Object.assign(new Error('no tunnel through the proxy within the deadline'), { code: 'ETIMEDOUT' }),
        ),
      connectTimeout(),
    );
    const tunnel = async (): Promise<Socket> => {
      try {
        await new Promise<void>((resolve, reject) => {
          toProxy.once(overTls ? 'secureConnect' : 'connect', () => resolve());
          toProxy.once('error', reject);
        });
        const host = connectHost(origin);
        const port = portOf(origin);
        if (route.kind === 'socks') {
          await socksConnect(toProxy, route.proxy, host, port);
        } else {
          const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
          const authorization =
            route.authorization === undefined ? '' : `Proxy-Authorization: ${route.authorization}\r\n`;
          toProxy.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${authorization}\r\n`);
          const { status } = await readResponseHead(toProxy);
          if (status !== 200) throw proxyError(`Proxy response (${status}) !== 200 when HTTP Tunneling`);
        }
      } finally {
        clearTimeout(timer);
        connecting.delete(toProxy);
      }
      toProxy.resume();
      if (!secure) return toProxy;
      const inner = connectWithin(secureTo(origin, toProxy), 'secureConnect');
      await new Promise<void>((resolve, reject) => {
        inner.once('secureConnect', () => resolve());
        inner.once('error', reject);
      });
      return inner;
    };
    return tunnel().catch((error: unknown) => {
      toProxy.destroy();
      throw error;
    });
  }

  /**
   * A connection to `origin`: a kept-alive one when one is idle, else a new one (returned at once when direct, still
   * connecting; a promise for a tunnel).
   */
  function connectionTo(key: string, origin: URL, route: Route): Socket | Promise<Socket> {
    for (const [socket, take] of idle.get(key) ?? []) {
      take();
      if (!socket.destroyed && socket.writable) return socket;
    }
    const track = (socket: Socket): Socket => {
      open.add(socket);
      socket.once('close', () => open.delete(socket));
      // Errors that come after an exchange gave up on the socket (a TLS socket reports a connection cut during its
      // handshake after its 'end') must not become uncaught exceptions; during an exchange its own listener has them.
      socket.on('error', () => undefined);
      return socket;
    };
    const made = openSocket(origin, route);
    return made instanceof Promise ? made.then(track) : track(made);
  }

  /**
   * Parks a connection whose answer was read whole for the next request to `key`: unref'd (an idle connection never
   * keeps the process alive), dropped when the server closes it, speaks unasked, or its idle time (the server's
   * `Keep-Alive: timeout`, less a second) runs out.
   */
  function keepIdle(key: string, socket: Socket, idleMs: number | undefined): void {
    let pool = idle.get(key);
    if (pool === undefined) {
      pool = new Map();
      idle.set(key, pool);
    }
    const drop = (): void => {
      take();
      socket.destroy();
    };
    const timer = idleMs === undefined ? undefined : setTimeout(drop, Math.max(0, idleMs - 1000));
    timer?.unref();
    const take = (): void => {
      pool.delete(socket);
      clearTimeout(timer);
      socket.off('data', drop).off('end', drop).off('error', drop).off('close', drop);
      socket.ref();
    };
    socket.on('data', drop).on('end', drop).on('error', drop).on('close', drop);
    socket.setKeepAlive(true, 1000);
    socket.unref();
    pool.set(socket, take);
  }

  /**
   * Writes one request on `socket` and reads its answer into `handlers`; settles when the answer is complete or the
   * exchange fails (the connection is then destroyed), or `signal` aborts it.
   */
  function roundTrip(
    socket: Socket,
    bytes: Buffer,
    method: string,
    signal: AbortSignal,
    handlers: AnswerHandlers,
  ): Promise<AnswerReader> {
    return new Promise((resolve, reject) => {
      const reader = new AnswerReader(method, handlers);
      let settled = false;
      const finish = (error?: unknown): void => {
        if (settled) return;
        settled = true;
        socket.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', finish);
        signal.removeEventListener('abort', onAbort);
        if (error === undefined) {
          resolve(reader);
        } else {
          socket.destroy();
          reject(error);
        }
      };
      const attempt = (work: () => boolean | undefined): void => {
        try {
          if (work() === true) finish();
        } catch (error) {
          finish(error);
        }
      };
      const onData = (chunk: Buffer): void => attempt(() => reader.push(chunk));
      const onEnd = (): void =>
        attempt(() => {
          reader.end();
          return true;
        });
      const onAbort = (): void => finish(signal.reason);
      if (signal.aborted) {
        onAbort();
        return;
      }
      socket.on('data', onData).on('end', onEnd).on('close', onEnd).on('error', finish);
      signal.addEventListener('abort', onAbort, { once: true });
      socket.write(bytes);
    });
  }

  async function exchange(request: HttpRequest, url: URL, signal: AbortSignal): Promise<HttpResponse> {
    const headers: Record<string, string> = { ...request.headers };
    let body: string | Uint8Array | undefined = request.body;
    if (request.json !== undefined) body = JSON.stringify(request.json);
    const hasContentType = Object.keys(headers).some((name) => name.toLowerCase() === 'content-type');
    if (body !== undefined && !hasContentType && (request.contentType !== undefined || request.json !== undefined)) {
      headers['content-type'] = request.contentType ?? 'application/json';
    }
    const route = routeFor(url);
    // An http origin through an http:// proxy gets the absolute URL sent to the proxy; anything else goes over a
    // connection (or tunnel) to the origin.
    const forward =
      route.kind === 'http-proxy' && url.protocol === 'http:' && route.proxy.protocol === 'http:' ? route : undefined;
    const connectTo = forward === undefined ? url : forward.proxy;
    const outgoing: Record<string, string> = { host: url.host, ...headers };
    if (forward?.authorization !== undefined) outgoing['proxy-authorization'] = forward.authorization;
    const payload = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    if (payload !== undefined && !Object.keys(headers).some((name) => name.toLowerCase() === 'content-length'))
      outgoing['content-length'] = String(payload.length);

    const path = forward === undefined ? `${url.pathname}${url.search}` : url.href;
    const head = Buffer.from(requestHead(request.method, path, outgoing), 'latin1');
    const key = `${connectTo.protocol}//${connectTo.host}`;
    const connection = connectionTo(key, connectTo, forward === undefined ? route : { kind: 'direct' });
    // A new direct connection is written to (and listened on) in the tick it was made: its errors are never missed.
    const socket = connection instanceof Promise ? await connection : connection;

    let status = 0;
    let raw: string[] = [];
    let streamed = false;
    const chunks: Buffer[] = [];
    let size = 0;
    const answer = await roundTrip(
      socket,
      payload === undefined ? head : Buffer.concat([head, payload]),
      request.method,
      signal,
      {
        onHead(answerHead) {
          status = answerHead.status;
          raw = answerHead.rawHeaders;
          streamed = request.onChunk !== undefined && status >= 200 && status < 300;
        },
        onBody(chunk) {
          if (streamed) {
            request.onChunk?.(chunk);
            return;
          }
          size += chunk.length;
          // Stop reading (and the connection with it): never buffer an answer past the limit.
          if (size > maxResponseBytes) {
            throw new HttpFailure('too-large', `the answer is larger than ${maxResponseBytes} bytes`, {
              url: url.href,
              target: targetOf(request),
              limit: maxResponseBytes,
            });
          }
          chunks.push(chunk);
        },
      },
    );
    if (answer.reusable) keepIdle(key, socket, answer.idleMs);
    else socket.destroy();

    let buffer = Buffer.concat(chunks);
    let text = buffer.toString('utf8');
    if (status >= 300) {
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
    // Every header as sent, repeated ones joined.
    const responseHeaders: Record<string, string> = {};
    for (let index = 0; index + 1 < raw.length; index += 2) {
      const name = raw[index]!.toLowerCase();
      responseHeaders[name] =
        name in responseHeaders ? `${responseHeaders[name]}, ${raw[index + 1]!}` : raw[index + 1]!;
    }
    let json: unknown;
    if (JSON_TYPE.test(responseHeaders['content-type'] ?? '')) {
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
    }
    return { status, headers: responseHeaders, body: buffer, text, json, url: withoutUserinfo(url.href) };
  }

  /** One attempt, until `deadline`; `budgetMs` (the send's whole time) is what a timeout message names. */
  async function once(
    request: HttpRequest,
    url: URL,
    deadline: number,
    budgetMs: number,
    callerSignal: AbortSignal | undefined,
  ): Promise<HttpResponse> {
    const allottedMs = Math.max(1, Math.ceil(deadline - Date.now()));
    // The deadline: a timer cleared when the attempt ends (AbortSignal.timeout's would live out its whole time, one per
    // send, in a process making thousands), unref'd as AbortSignal.timeout's is; its reason is the same TimeoutError.
    const timer = new AbortController();
    const expiry = setTimeout(
      () => timer.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      allottedMs,
    );
    expiry.unref();
    const signal = callerSignal === undefined ? timer.signal : AbortSignal.any([callerSignal, timer.signal]);
    const key = Symbol('send');
    inflight.set(key, Date.now() + allottedMs);
    let onAbort: (() => void) | undefined;
    // The answer to a send given up on is not waited for: the race answers at the deadline.
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
      throw translate(error, {
        url: url.href,
        target: targetOf(request),
        timedOut: timer.signal.aborted,
        callerSignal,
        budgetMs,
      });
    } finally {
      clearTimeout(expiry);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
      inflight.delete(key);
      if (signal.aborted && inflight.size === 0) dropConnecting();
    }
  }

  return {
    async send(request, sendOptions = {}) {
      const url = requestUrl(request);
      const target = targetOf(request);
      const started = Date.now();
      const budgetMs = Math.max(
        1,
        Math.round(
          Math.min(sendOptions.timeoutMs ?? timeoutMs, (sendOptions.deadline ?? Number.POSITIVE_INFINITY) - started),
        ),
      );
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
        expired: () =>
          new HttpFailure('timeout', `no answer within ${budgetMs} ms`, { url: url.href, target, timeoutMs: budgetMs }),
      });
    },
    async close() {
      dropConnecting();
      for (const socket of open) socket.destroy();
      open.clear();
      idle.clear();
    },
  };
}
