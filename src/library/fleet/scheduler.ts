/**
 * The fleet's timing, apart from any I/O so that a frozen clock tests it: when a credential is refreshed (ahead of
 * its expiry, jittered so that credentials issued together do not come due together), how long a failing cluster
 * waits before its next attempt (exponential backoff, jittered, capped), one timer for any number of due times, and
 * FIFO semaphores that bound concurrent work.
 */

/** The clock and timers the fleet runs on. Production: {@link systemClock}; tests: a frozen clock they advance. */
export interface FleetClock {
  /** Epoch milliseconds. */
  now(): number;
  /** Calls `callback` once after `delayMs`; the returned handle cancels it. Must not keep the process alive. */
  setTimer(callback: () => void, delayMs: number): unknown;
  clearTimer(handle: unknown): void;
}

/** The system clock; its timers are unref'd (the hub watch is what keeps a fleet's process alive). */
export const systemClock: FleetClock = {
  now: () => Date.now(),
  setTimer(callback, delayMs) {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    timer.unref();
    return timer;
  },
  clearTimer(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};

/** How refreshes and retries are timed. Every field has a default ({@link DEFAULT_REFRESH_POLICY}). */
export interface RefreshPolicy {
  /**
   * A refresh comes due `marginMs` before the credential's expiry (the provider's `minRemainingSeconds` for our
   * providers: the point from which the shared cache stops serving it), minus a random share of the lifetime.
   */
  marginMs: number;
  /** The random share: up to this fraction of the credential's lifetime earlier (default 0.1). */
  jitterFraction: number;
  /** ...and at most this much earlier (default 5 min). */
  maxJitterMs: number;
  /** Never sooner than this after the credential was obtained (default 1 s): a short-lived credential cannot spin. */
  minDelayMs: number;
  /** First retry after a failure (default 1 s); doubles per consecutive failure. */
  backoffBaseMs: number;
  /** Longest wait between attempts (default 5 min). */
  backoffMaxMs: number;
}

/** The refresh policy a fleet uses where its `refresh` option sets nothing. */
export const DEFAULT_REFRESH_POLICY: Readonly<RefreshPolicy> = Object.freeze({
  marginMs: 60_000,
  jitterFraction: 0.1,
  maxJitterMs: 300_000,
  minDelayMs: 1_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 300_000,
});

/**
 * When to refresh a credential obtained at `obtainedAt` that expires at `expiresAt` (epoch ms): `expiresAt −
 * marginMs − r × min(jitterFraction × lifetime, maxJitterMs)`, `r` from `random` in [0, 1), never before
 * `obtainedAt + minDelayMs`. Undefined for a credential without expiry (kept until the API server refuses it).
 *
 * @example
 * ```ts
 * refreshTime(0, 3_600_000, DEFAULT_REFRESH_POLICY, () => 0.5); // 3_600_000 − 60_000 − 180_000
 * ```
 */
export function refreshTime(
  obtainedAt: number,
  expiresAt: number | undefined,
  policy: RefreshPolicy,
  random: () => number,
): number | undefined {
  if (expiresAt === undefined) return undefined;
  const lifetime = Math.max(0, expiresAt - obtainedAt);
  const spread = Math.min(policy.jitterFraction * lifetime, policy.maxJitterMs);
  const at = expiresAt - policy.marginMs - random() * spread;
  return Math.max(Math.round(at), obtainedAt + policy.minDelayMs);
}

/**
 * The wait before attempt `failures + 1` after `failures` consecutive failures (≥ 1): `backoffBaseMs × 2^(failures−1)`,
 * capped at `backoffMaxMs`, then scaled by `0.5 + random / 2` so that clusters failing together retry apart.
 */
export function backoffDelay(failures: number, policy: RefreshPolicy, random: () => number): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 30);
  const delay = Math.min(policy.backoffBaseMs * 2 ** exponent, policy.backoffMaxMs);
  return Math.round(delay * (0.5 + random() / 2));
}

/**
 * Due times by key, on one timer: {@link schedule} sets (or moves) a key's time, {@link cancel} drops it, and
 * `onDue(key)` is called for each key whose time has come, earliest first. A min-heap with lazy deletion, so
 * 10 000 keys cost 10 000 small entries and one timer, not 10 000 timers.
 */
export class DueQueue {
  readonly #clock: FleetClock;
  readonly #onDue: (key: string) => void;
  /** The live due time of each key. */
  readonly #due = new Map<string, number>();
  /** Heap of [time, key]; an entry whose time is not the key's live one is stale and skipped. */
  #heap: [number, string][] = [];
  #timer: { handle: unknown; at: number } | undefined;
  #closed = false;

  constructor(clock: FleetClock, onDue: (key: string) => void) {
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** Sets `key` due at `at` (epoch ms), replacing an earlier schedule of it. */
  schedule(key: string, at: number): void {
    if (this.#closed) return;
    this.#due.set(key, at);
    this.#push([at, key]);
    this.#arm();
  }

  cancel(key: string): void {
    this.#due.delete(key);
  }

  /** When `key` is due, if it is scheduled. */
  dueAt(key: string): number | undefined {
    return this.#due.get(key);
  }

  get size(): number {
    return this.#due.size;
  }

  /** Cancels everything; later calls to {@link schedule} do nothing. */
  close(): void {
    this.#closed = true;
    this.#due.clear();
    this.#heap = [];
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer.handle);
    this.#timer = undefined;
  }

  #arm(): void {
    this.#dropStale();
    const top = this.#heap[0];
    if (top === undefined) {
      if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer.handle);
      this.#timer = undefined;
      return;
    }
    if (this.#timer !== undefined && this.#timer.at <= top[0]) return;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer.handle);
    const at = top[0];
    this.#timer = { at, handle: this.#clock.setTimer(() => this.#fire(), at - this.#clock.now()) };
  }

  #fire(): void {
    this.#timer = undefined;
    const now = this.#clock.now();
    const due: string[] = [];
    for (;;) {
      this.#dropStale();
      const top = this.#heap[0];
      if (top === undefined || top[0] > now) break;
      this.#pop();
      this.#due.delete(top[1]);
      due.push(top[1]);
    }
    this.#arm();
    for (const key of due) this.#onDue(key);
  }

  #dropStale(): void {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || this.#due.get(top[1]) === top[0]) return;
      this.#pop();
    }
  }

  #push(entry: [number, string]): void {
    const heap = this.#heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]![0] <= entry[0]) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = entry;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]![0] < heap[left]![0] ? right : left;
      if (heap[child]![0] >= last[0]) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = last;
  }
}

/** A FIFO counting semaphore: at most `limit` holders; waiters are served in arrival order. */
export class Semaphore {
  readonly limit: number;
  #held = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`a semaphore needs a limit of at least 1, got ${limit}`);
    this.limit = limit;
  }

  /** How many hold it now. */
  get held(): number {
    return this.#held;
  }

  /** How many wait for it. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** Waits for a place; resolves with the function that gives it back (call it once). */
  async acquire(): Promise<() => void> {
    if (this.#held < this.limit) {
      this.#held += 1;
    } else {
      // The releaser hands its place over: #held stays the same.
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (next === undefined) this.#held -= 1;
      else next();
    };
  }

  /** Runs `work` holding a place. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await work();
    } finally {
      release();
    }
  }
}
