/**
 * The one retry loop: attempts with exponential backoff (optionally jittered) inside an overall deadline. Which
 * failures and which results are worth another attempt is the caller's call; the loop never sleeps past the
 * deadline and never starts an attempt without time left.
 */

export interface RetryOptions<T> {
  /** At most this many attempts in all (1 = no retry). */
  attempts: number;
  /** First backoff (ms); doubles each attempt up to `maxDelayMs`. */
  baseDelayMs: number;
  /** Default: no cap. */
  maxDelayMs?: number;
  /** A random source in [0, 1): the backoff becomes `delay × (0.5 + r / 2)`. Absent: no jitter. */
  jitter?: () => number;
  /** The overall deadline (ms, on the clock `now`). Absent: attempts and backoff only. */
  deadline?: number;
  /** Default `Date.now`. */
  now?: () => number;
  /** Default: a timer that resolves early (never rejects) when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** No retry once it is aborted. */
  signal?: AbortSignal;
  /** Whether a thrown error may go away by itself. */
  retryable(error: unknown): boolean;
  /** Whether a result should be tried again (an HTTP 503, say); the last one is returned when the loop ends. */
  retryResult?(result: T): boolean;
  /** Before each retry: what failed (an error, or a result), the attempt number, the backoff. */
  onRetry?(failure: { error: unknown } | { result: T }, attempt: number, waitMs: number): void;
  /** The error to throw when a retryable error ends the loop (default: that error). */
  giveUp?(error: unknown, attempts: number): unknown;
  /** The error to throw when an attempt would start without time left (default: a plain Error). */
  expired?(): unknown;
}

async function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  const { setTimeout: sleep } = await import('node:timers/promises');
  await sleep(ms, undefined, signal === undefined ? {} : { signal }).catch(() => undefined);
}

/**
 * Runs `attempt(remainingMs, number)` until it succeeds, throws a non-retryable error, the attempts run out, the
 * deadline would pass during the backoff, or `signal` aborts. `remainingMs` is the time left to the deadline
 * (Infinity without one): an attempt must not take longer.
 *
 * @example
 * ```ts
 * const body = await withRetries((remaining) => fetchOnce(remaining), {
 *   attempts: 3, baseDelayMs: 200, deadline: Date.now() + 30_000, retryable: (e) => isTransient(e),
 * });
 * ```
 */
export async function withRetries<T>(
  attempt: (remainingMs: number, number: number) => Promise<T>,
  options: RetryOptions<T>,
): Promise<T> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? defaultSleep;
  const max = options.maxDelayMs ?? Number.POSITIVE_INFINITY;
  const aborted = (): boolean => options.signal?.aborted === true;
  const left = (): number => (options.deadline === undefined ? Number.POSITIVE_INFINITY : options.deadline - now());
  for (let number = 1; ; number += 1) {
    const remaining = left();
    if (remaining <= 0) {
      throw options.expired?.() ?? new Error('no time left for another attempt');
    }
    let failure: { error: unknown } | { result: T };
    try {
      const result = await attempt(remaining, number);
      if (options.retryResult?.(result) !== true) return result;
      failure = { result };
    } catch (error) {
      if (!options.retryable(error)) throw error;
      failure = { error };
    }
    const base = Math.min(max, options.baseDelayMs * 2 ** (number - 1));
    const backoff = options.jitter === undefined ? base : base * (0.5 + options.jitter() / 2);
    if (number < options.attempts && left() > backoff && !aborted()) {
      options.onRetry?.(failure, number, Math.round(backoff));
      await sleep(backoff, options.signal);
      if (!aborted()) continue;
    }
    if ('result' in failure) return failure.result;
    throw options.giveUp === undefined ? failure.error : options.giveUp(failure.error, number);
  }
}
