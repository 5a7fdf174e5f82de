/**
 * The fleet's refresh scheduler: each key (a credential slot) is due at a time ({@link DueQueue}); a key whose time
 * has come waits in line ({@link FifoQueue}) until fewer than `maxStarted` scheduled refreshes are under way, then its
 * refresh is started. A request that fetches a key itself takes it off both.
 */
import type { FleetClock } from './clock.js';
import { DueQueue } from './due-queue.js';
import { FifoQueue } from './fifo-queue.js';

export interface RefreshSchedulerOptions {
  clock: FleetClock;
  /** Scheduled refreshes under way at once, at most; the next ones wait in line. */
  maxStarted: number;
  /** Whether `key` still has a credential to refresh (a key that has none is not started). */
  isLive(key: string): boolean;
  /** Starts the refresh of `key`; the promise settles when it ends (its outcome is the caller's to record). */
  start(key: string): Promise<unknown>;
}

/**
 * Due times, the line of keys that came due, and the bound on refreshes started. A cold fleet has every member due at
 * once: the refreshes start as places free up, in the order they came due, instead of all of them started at once
 * and waiting for a place (each wait holds its promise chain long enough to be promoted to V8's old generation,
 * which grows by it and keeps the pages).
 */
export class RefreshScheduler {
  readonly #options: RefreshSchedulerOptions;
  readonly #due: DueQueue;
  readonly #waiting = new FifoQueue();
  /** Scheduled refreshes started and not ended: at most `maxStarted`. */
  #started = 0;

  constructor(options: RefreshSchedulerOptions) {
    this.#options = options;
    this.#due = new DueQueue(options.clock, (key) => this.#onDue(key));
  }

  /** Sets `key` due at `at` (epoch ms), replacing an earlier time. */
  schedule(key: string, at: number): void {
    this.#due.schedule(key, at);
  }

  /**
   * Drops `key`'s due time and, if it came due and waits for a place, its place in line: a fetch a request started
   * serves the refresh, and a released key has nothing to refresh.
   */
  cancel(key: string): void {
    this.#due.cancel(key);
    this.#waiting.delete(key);
  }

  /** When `key` is due next (epoch ms), if it is scheduled. */
  dueAt(key: string): number | undefined {
    return this.#due.dueAt(key);
  }

  /** Keys with a due time. */
  get scheduled(): number {
    return this.#due.size;
  }

  /** Keys that came due and wait for a place. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Cancels every due time and empties the line; later calls to {@link schedule} do nothing. */
  close(): void {
    this.#due.close();
    this.#waiting.clear();
  }

  /** `key`'s time has come: it refreshes even if its credential is still fresh, once a place is free. */
  #onDue(key: string): void {
    if (!this.#options.isLive(key) || this.#waiting.has(key)) return;
    this.#waiting.add(key);
    this.#startWaiting();
  }

  #startWaiting(): void {
    while (this.#started < this.#options.maxStarted && this.#waiting.size > 0) {
      const key = this.#waiting.shift();
      if (key === undefined) break;
      // Released while it waited.
      if (!this.#options.isLive(key)) continue;
      this.#started += 1;
      // The outcome is recorded by the caller's fetch; a rejection here is already reported.
      this.#options
        .start(key)
        .catch(() => undefined)
        .finally(() => {
          this.#started -= 1;
          this.#startWaiting();
        });
    }
  }
}
