/**
 * The scheduler's waiting line: keys in the order they came due, each at most once, where any key can leave the
 * line early (a request fetched it first, or its credential was released) and the first one is taken in constant time.
 */

/**
 * A FIFO queue of distinct keys. {@link #queued} holds the keys still waiting; {@link #order} may also hold keys
 * already taken or deleted, skipped when reached. Not a Set's own order: taking a Set's first key after many deletions
 * walks past every deleted entry, a cost that grows with the fleet.
 */
export class FifoQueue {
  readonly #queued = new Set<string>();
  #order: string[] = [];
  #head = 0;

  /** Keys waiting. */
  get size(): number {
    return this.#queued.size;
  }

  has(key: string): boolean {
    return this.#queued.has(key);
  }

  /** Puts `key` at the end of the line (callers check {@link has} first: a key already waiting keeps its place). */
  add(key: string): void {
    this.#queued.add(key);
    this.#order.push(key);
  }

  /** Takes `key` out of the line; false if it was not waiting. */
  delete(key: string): boolean {
    return this.#queued.delete(key);
  }

  /** Takes the first key still waiting out of the line; undefined when none waits. */
  shift(): string | undefined {
    for (;;) {
      const key = this.#order[this.#head];
      if (key === undefined) return undefined;
      this.#head += 1;
      if (this.#head >= 1024 && this.#head * 2 >= this.#order.length) {
        this.#order = this.#order.slice(this.#head);
        this.#head = 0;
      }
      // Already taken out (deleted), or a stale repeat of a key that came due again.
      if (this.#queued.delete(key)) return key;
    }
  }

  clear(): void {
    this.#queued.clear();
    this.#order = [];
    this.#head = 0;
  }
}
