/**
 * The network seam of the issuer client (STYLE 2): send one built request over an undici dispatcher that trusts
 * ONLY the issuer's CA, translate undici / TLS errors into stable codes in one place, and run a whole handshake
 * attempt again with backoff inside an overall deadline when the issuer is down, slow or answers 5xx.
 *
 * Loaded on a cache miss only (undici is heavy).
 */
import { Agent, request, type Dispatcher } from 'undici';
import { CredentialsError, isCredentialsError, type ErrorCode, type ERRORS } from '../../core/errors.js';

/** The codes the registry marks retryable: the only ones {@link retryableError} takes. */
type RetryableCode = { [K in ErrorCode]: (typeof ERRORS)[K]['retryable'] extends true ? K : never }[ErrorCode];

/** A request as the builders make it: plain data, no I/O. */
export interface IssuerRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

/** A response as the processors read it. */
export interface IssuerResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The request's URL, for messages. */
  url: string;
}

/** Bigger answers are not an issuer's. */
const MAX_BODY_BYTES = 1 << 20;

/**
 * An undici Agent whose TLS connections verify the server against `caPem` and nothing else (the system roots are
 * NOT trusted: `ca` replaces them). Verification cannot be switched off.
 */
export function issuerDispatcher(caPem: string): Dispatcher {
  return new Agent({
    connect: { ca: caPem, rejectUnauthorized: true },
    connectTimeout: 5_000,
    keepAliveTimeout: 1_000,
  });
}

const TLS_ERROR_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether a failure may go away by itself (try again) or not (report now): the registry says, by code. */
export function isRetryable(error: unknown): boolean {
  return isCredentialsError(error) && error.retryable;
}

/** A CredentialsError worth another attempt (issuer down, slow, 5xx): only a code the registry marks retryable compiles. */
export function retryableError<C extends RetryableCode>(
  code: C,
  message: string,
  options: { path?: string; hint?: string; cause?: unknown } = {},
): CredentialsError<C> {
  return new CredentialsError(code, message, options);
}

function translate(error: unknown, url: string, timedOut: boolean): CredentialsError {
  const code = (error as { code?: unknown }).code;
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const tlsCode = [code, cause?.code].find((c): c is string => typeof c === 'string' && TLS_ERROR_CODES.has(c));
  if (tlsCode !== undefined) {
    return new CredentialsError('ERR_TENANT_CERT_ISSUER_TLS', `the issuer's TLS certificate is not trusted (${tlsCode}): ${(error as Error).message}`, {
      path: url,
      hint: 'spec.cluster.config.issuerCA must be base64 of the issuer\'s DIR/serving-ca.crt, and issuerURL a host name or IP its certificate is for',
      cause: error,
    });
  }
  if (timedOut || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    return retryableError('ERR_TENANT_CERT_ISSUER_TIMEOUT', `the issuer did not answer in time`, { path: url, cause: error });
  }
  const detail = typeof cause?.code === 'string' ? cause.code : typeof code === 'string' ? code : (error as Error).message;
  return retryableError('ERR_TENANT_CERT_ISSUER_UNREACHABLE', `cannot reach the issuer (${detail})`, {
    path: url,
    hint: 'is `clusterprofile issuer serve` running and spec.cluster.config.issuerURL right?',
    cause: error,
  });
}

/**
 * Sends one request; resolves with the response whatever its status (processors decide), rejects with a
 * {@link CredentialsError} for transport failures. `timeoutMs` bounds the whole exchange, body included.
 */
export async function sendIssuerRequest(
  built: IssuerRequest,
  options: { dispatcher: Dispatcher; timeoutMs: number; signal?: AbortSignal },
): Promise<IssuerResponse> {
  const timeout = AbortSignal.timeout(Math.max(1, options.timeoutMs));
  const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
  const url = built.url.href;
  try {
    const response = await request(built.url, {
      method: built.method,
      headers: built.headers,
      ...(built.body === undefined ? {} : { body: built.body }),
      dispatcher: options.dispatcher,
      signal,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) {
        response.body.destroy();
        throw retryableError('ERR_TENANT_CERT_ISSUER_ERROR', `the issuer's answer is larger than ${MAX_BODY_BYTES} bytes`, { path: url });
      }
      chunks.push(chunk as Buffer);
    }
    return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks).toString('utf8'), url };
  } catch (error) {
    if (isCredentialsError(error)) {
      throw error;
    }
    if (options.signal?.aborted === true) {
      throw new CredentialsError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'aborted while talking to the issuer', { path: url, cause: error });
    }
    throw translate(error, url, timeout.aborted);
  }
}

export interface RetryOptions {
  /** The overall deadline (ms since the epoch, on the clock `now`). */
  deadline: number;
  now(): number;
  /** First backoff (ms); doubles each attempt up to `maxBackoffMs`, with jitter. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** At most this many attempts in all. */
  maxAttempts?: number;
  sleep?(ms: number, signal?: AbortSignal): Promise<void>;
  signal?: AbortSignal;
  /** Called before each retry: a line for stderr. */
  onRetry?(error: CredentialsError, attempt: number, waitMs: number): void;
  random?(): number;
}

async function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  const { setTimeout: sleep } = await import('node:timers/promises');
  await sleep(ms, undefined, signal === undefined ? {} : { signal }).catch(() => undefined);
}

/**
 * Runs `attempt(remainingMs)` until it succeeds, fails with a non-retryable error, the attempts run out or the
 * deadline passes. The last error is thrown, its message saying how many attempts were made.
 */
export async function withRetries<T>(attempt: (remainingMs: number, number: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const maxAttempts = options.maxAttempts ?? 5;
  const initial = options.initialBackoffMs ?? 250;
  const max = options.maxBackoffMs ?? 4_000;
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? Math.random;
  for (let number = 1; ; number += 1) {
    const remaining = options.deadline - options.now();
    try {
      if (remaining <= 0) {
        throw new CredentialsError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'no time left to talk to the issuer');
      }
      return await attempt(remaining, number);
    } catch (error) {
      if (!isRetryable(error)) {
        throw error;
      }
      const failure = error as CredentialsError;
      const backoff = Math.min(max, initial * 2 ** (number - 1)) * (0.5 + random() / 2);
      const left = options.deadline - options.now();
      if (number >= maxAttempts || left <= backoff || options.signal?.aborted === true) {
        const what = number === 1 ? '1 attempt' : `${number} attempts`;
        throw new CredentialsError(failure.code, `${failure.message} (gave up after ${what})`, {
          ...(failure.path === undefined ? {} : { path: failure.path }),
          ...(failure.hint === undefined ? {} : { hint: failure.hint }),
          cause: failure,
        });
      }
      options.onRetry?.(failure, number, Math.round(backoff));
      await sleep(backoff, options.signal);
    }
  }
}
