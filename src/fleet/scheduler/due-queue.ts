/**
 * The scheduler's timer: due times by key on one timer (a min-heap), so that a fleet of any size has one pending
 * timer for its refreshes, not one per credential.
 */
import type { FleetClock } from './clock.js';

/**
 * Due times by key, on one timer: {@link schedule} sets (or moves) a key's time, {@link cancel} drops it, and
 * `onDue(key)` is called for each key whose time has come, earliest first. A min-heap with lazy deletion, so
 * n keys cost n small entries and one timer, not n timers.
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
