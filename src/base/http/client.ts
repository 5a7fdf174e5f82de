/**
 * The HTTP client: what callers configure (TLS, proxy, deadline, body limit, retries) and `createHttpClient`, which
 * composes the rooms of the seam — routing (`route.ts`), connections (`connect.ts`, `tunnels.ts`), the keep-alive
 * pool (`pool.ts`), one exchange (`exchange.ts`), the deadline (`deadline.ts`), failures (`failures.ts`) — with
 * retries and backoff (`../retry.ts`) that never run past the deadline.
 */
import { withRetries } from '../retry.js';
import { Connector } from './connect.js';
import { Deadlines, sendBudget } from './deadline.js';
import { exchange, type HttpRequest, type HttpResponse } from './exchange.js';
import { HttpFailure, isHttpFailure, translateFailure } from './failures.js';
import { Pool } from './pool.js';
import { createRouter, type ProxyOptions } from './route.js';
import { nodeTlsOptions, type TlsOptions } from './tls.js';
import { requestUrl, targetOf } from './url.js';

/** Default deadline of one send (ms), retries included. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Default largest answer read (bytes); more is refused, not buffered. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

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

const retryableStatus = (status: number): boolean => status === 429 || status >= 500;

/**
 * A client for one server identity: its TLS settings, proxy, deadline, body limit and retry policy. Its connections
 * (one keep-alive pool per origin, any number of connections) are made on the first send.
 */
export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadlines = new Deadlines(timeoutMs);
  const connector = new Connector(nodeTlsOptions(options.tls), () => deadlines.connectTimeout());
  const context = {
    route: createRouter(options.proxy),
    pool: new Pool((origin, route) => connector.open(origin, route)),
    maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
  };

  /** One attempt, until `deadline`; `budgetMs` (the send's whole time) is what a timeout message names. */
  const once = (request: HttpRequest, url: URL, deadline: number, budgetMs: number, signal?: AbortSignal) =>
    deadlines.run(deadline, signal, (attempt) => exchange(request, url, attempt, context), {
      fail: (error, timedOut) =>
        translateFailure(error, { url: url.href, target: targetOf(request), timedOut, callerSignal: signal, budgetMs }),
      abandoned: () => connector.dropConnecting(),
    });

  return {
    async send(request, sendOptions = {}) {
      const url = requestUrl(request);
      const { deadline, budgetMs } = sendBudget(timeoutMs, sendOptions);
      const { signal } = sendOptions;
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
        retryResult: (response) => (retry.retryStatus ?? retryableStatus)(response.status),
        expired: () =>
          new HttpFailure('timeout', `no answer within ${budgetMs} ms`, {
            url: url.href,
            target: targetOf(request),
            timeoutMs: budgetMs,
          }),
      });
    },
    async close() {
      connector.dropConnecting();
      context.pool.close();
    },
  };
}
