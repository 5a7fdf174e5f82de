/**
 * How a send that got no HTTP answer fails: {@link HttpFailure}, its kinds, and the one translation of node's errors
 * (socket, DNS, TLS, proxy, HTTP/1.1 wire) into them — by their codes, the deadline and the caller's signal.
 */
import { clip, redactUrl, withoutUserinfo } from '../errors.js';

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
export function translateFailure(
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
