/**
 * The clock and timers the fleet's scheduling runs on, as an interface so that tests freeze time and move it
 * themselves; {@link systemClock} is the production one.
 */

/** The clock and timers the fleet runs on. Production: the system's (`Date.now`, `setTimeout`); tests: a frozen clock they advance. */
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
