/**
 * A FleetClock that moves only when a test tells it to: timers fire in time order as it advances, and between two
 * timers the test's `settle` lets the work they started run (promise chains, I/O the test waits for).
 */
import type { FleetClock } from '../../src/fleet/scheduler/clock.js';

export class FrozenClock implements FleetClock {
  time: number;
  readonly timers = new Map<number, { at: number; callback: () => void }>();
  readonly #settle: () => Promise<void>;
  #next = 1;

  constructor(start: number, settle: () => Promise<void>) {
    this.time = start;
    this.#settle = settle;
  }

  now(): number {
    return this.time;
  }

  setTimer(callback: () => void, delayMs: number): unknown {
    const id = this.#next++;
    this.timers.set(id, { at: this.time + Math.max(0, delayMs), callback });
    return id;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Moves to `time + ms`, firing every timer due on the way (and letting the work it starts run). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await this.#settle();
      let earliest: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.timers)
        if (entry[1].at <= end && (earliest === undefined || entry[1].at < earliest[1].at)) earliest = entry;
      if (earliest === undefined) break;
      this.timers.delete(earliest[0]);
      this.time = Math.max(this.time, earliest[1].at);
      earliest[1].callback();
    }
    this.time = end;
    await this.#settle();
  }
}
