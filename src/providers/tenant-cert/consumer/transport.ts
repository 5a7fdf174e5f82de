/**
 * The issuer client's adapter over the HTTP seam (src/base/http.ts): one built request sent over a client that
 * trusts ONLY the issuer's CA, the seam's classified failures mapped to this plugin's codes, and the handshake
 * retry loop (src/base/retry.ts) with this plugin's messages.
 *
 * Loaded on a cache miss only.
 */
import { CredentialsError, isCredentialsError, type ErrorCode, type ERRORS } from '../../../base/errors.js';
import { createHttpClient, isHttpFailure, type HttpClient } from '../../../base/http.js';
import { withRetries as retryLoop } from '../../../base/retry.js';

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
 * An HTTP client whose TLS connections verify the server against `caPem` and nothing else (the system roots are
 * NOT trusted). Verification cannot be switched off. `timeoutMs` bounds how long a connection may take to make.
 */
export function issuerClient(caPem: string, timeoutMs: number): HttpClient {
  return createHttpClient({ tls: { caPem }, timeoutMs, maxResponseBytes: MAX_BODY_BYTES });
}

/** Whether a transport failure may go away by itself (try again) or not (report now). */
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

/**
 * Sends one request; resolves with the response whatever its status (processors decide), rejects with a
 * {@link CredentialsError} for transport failures. `timeoutMs` bounds the whole exchange: connect, TLS and body.
 */
export async function sendIssuerRequest(
  built: IssuerRequest,
  options: { client: HttpClient; timeoutMs: number; signal?: AbortSignal },
): Promise<IssuerResponse> {
  try {
    const response = await options.client.send(
      {
        method: built.method,
        url: built.url,
        headers: built.headers,
        ...(built.body === undefined ? {} : { body: built.body }),
      },
      {
        timeoutMs: Math.max(1, options.timeoutMs),
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      },
    );
    return { status: response.status, headers: response.headers, body: response.text, url: response.url };
  } catch (error) {
    if (!isHttpFailure(error)) throw error;
    const path = error.url;
    switch (error.kind) {
      case 'certificate':
        throw new CredentialsError(
          'ERR_TENANT_CERT_ISSUER_TLS',
          `the issuer's TLS certificate is not trusted (${error.code}): ${error.message}`,
          {
            path,
            hint: "spec.cluster.config.issuerCA must be base64 of the issuer's DIR/serving-ca.crt, and issuerURL a host name or IP its certificate is for",
            cause: error,
          },
        );
      case 'aborted':
        throw new CredentialsError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'aborted while talking to the issuer', {
          path,
          cause: error,
        });
      case 'timeout':
        throw retryableError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'the issuer did not answer in time', {
          path,
          cause: error,
        });
      case 'too-large':
        throw retryableError(
          'ERR_TENANT_CERT_ISSUER_ERROR',
          `the issuer's answer is larger than ${error.limit} bytes`,
          { path, cause: error },
        );
      default:
        throw retryableError(
          'ERR_TENANT_CERT_ISSUER_UNREACHABLE',
          `cannot reach the issuer (${error.code ?? error.message})`,
          {
            path,
            hint: 'is `clusterprofile issuer serve` running and spec.cluster.config.issuerURL right?',
            cause: error,
          },
        );
    }
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

/**
 * Runs `attempt(remainingMs)` until it succeeds, fails with a non-retryable error, the attempts run out or the
 * deadline passes. The last error is thrown, its message saying how many attempts were made.
 */
export async function withRetries<T>(
  attempt: (remainingMs: number, number: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  return retryLoop(attempt, {
    attempts: options.maxAttempts ?? 5,
    baseDelayMs: options.initialBackoffMs ?? 250,
    maxDelayMs: options.maxBackoffMs ?? 4_000,
    jitter: options.random ?? Math.random,
    deadline: options.deadline,
    now: options.now,
    ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    retryable: isRetryable,
    onRetry: (failure, number, waitMs) => {
      if ('error' in failure) options.onRetry?.(failure.error as CredentialsError, number, waitMs);
    },
    giveUp: (error, number) => {
      const failure = error as CredentialsError;
      const what = number === 1 ? '1 attempt' : `${number} attempts`;
      return new CredentialsError(failure.code, `${failure.message} (gave up after ${what})`, {
        ...(failure.path === undefined ? {} : { path: failure.path }),
        ...(failure.hint === undefined ? {} : { hint: failure.hint }),
        cause: failure,
      });
    },
    expired: () => new CredentialsError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'no time left to talk to the issuer'),
  });
}
