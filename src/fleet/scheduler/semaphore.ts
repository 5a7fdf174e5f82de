/**
 * The bounds on concurrent work (credential fetches, plugin processes): a FIFO counting semaphore, so that whoever
 * waited first gets the next place.
 */

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
