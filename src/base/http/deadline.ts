/**
 * Deadlines: one per send, covering DNS, TCP connect, TLS, the request and the whole answer, retries included. Each
 * attempt runs under an abort signal that fires at the deadline (or with the caller's signal) and is not waited for
 * past it; the deadlines of the sends under way also bound how long a new connection may take.
 */

/** The deadline of a send begun at `now` (ms since the epoch) and the time it has (ms, at least 1). */
export function sendBudget(
  timeoutMs: number,
  options: { timeoutMs?: number; deadline?: number },
  now = Date.now(),
): { deadline: number; budgetMs: number } {
  const budgetMs = Math.max(
    1,
    Math.round(Math.min(options.timeoutMs ?? timeoutMs, (options.deadline ?? Number.POSITIVE_INFINITY) - now)),
  );
  return { deadline: now + budgetMs, budgetMs };
}

/** What {@link Deadlines.run} does when an attempt ends without an answer. */
export interface DeadlineHandlers {
  /** The error to reject with, from what the attempt failed with; `timedOut` when its deadline passed. */
  fail(error: unknown, timedOut: boolean): Error;
  /** Called when an attempt given up on (deadline or abort) was the last one under way. */
  abandoned(): void;
}

/** The deadlines of one client's sends under way. */
export class Deadlines {
  /** Deadlines of the attempts under way: a new connection may take until the latest of them. */
  readonly #inflight = new Map<symbol, number>();
  readonly #defaultMs: number;

  /** `defaultMs`: how long a connection made while no send is under way may take (the client's timeout). */
  constructor(defaultMs: number) {
    this.#defaultMs = defaultMs;
  }

  /**
   * How long a new connection may take: until the latest deadline of the sends under way, plus a second. Sends end
   * themselves at their deadline (and drop what still connects); this only keeps a connection nobody waits for from
   * lingering.
   */
  connectTimeout(): number {
    const latest = this.#inflight.size === 0 ? Date.now() + this.#defaultMs : Math.max(...this.#inflight.values());
    return Math.max(1, latest - Date.now()) + 1000;
  }

  /**
   * Runs `work` until `deadline`: its signal aborts at the deadline or with `callerSignal`, and then the attempt
   * rejects at once (what `work` still does is not waited for) with `handlers.fail(reason, timedOut)`, as it does
   * with whatever `work` rejects with.
   */
  async run<T>(
    deadline: number,
    callerSignal: AbortSignal | undefined,
    work: (signal: AbortSignal) => Promise<T>,
    handlers: DeadlineHandlers,
  ): Promise<T> {
    const allottedMs = Math.max(1, Math.ceil(deadline - Date.now()));
    // A timer cleared when the attempt ends (AbortSignal.timeout's would live out its whole time, one per send, in a
    // process making thousands), unref'd as AbortSignal.timeout's is; its reason is the same TimeoutError.
    const timer = new AbortController();
    const expiry = setTimeout(
      () => timer.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
      allottedMs,
    );
    expiry.unref();
    const signal = callerSignal === undefined ? timer.signal : AbortSignal.any([callerSignal, timer.signal]);
    const key = Symbol('send');
    this.#inflight.set(key, Date.now() + allottedMs);
    let onAbort: (() => void) | undefined;
    // The answer to a send given up on is not waited for: the race answers at the deadline.
    const abandon = new Promise<never>((_, reject) => {
      onAbort = () => reject(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    const attempt = work(signal);
    attempt.catch(() => undefined);
    abandon.catch(() => undefined);
    try {
      return await Promise.race([attempt, abandon]);
    } catch (error) {
      throw handlers.fail(error, timer.signal.aborted);
    } finally {
      clearTimeout(expiry);
      if (onAbort !== undefined) signal.removeEventListener('abort', onAbort);
      this.#inflight.delete(key);
      if (signal.aborted && this.#inflight.size === 0) handlers.abandoned();
    }
  }
}
