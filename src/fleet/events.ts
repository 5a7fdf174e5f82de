/**
 * The fleet's typed event bus: listeners by event type ({@link FleetEventBus.on}) and async iterators
 * ({@link FleetEventBus.subscribe}). A listener that throws is reported through `warn` and stops nothing else; an
 * iterator queues what it has not read yet and ends when the bus ends, its signal aborts or the loop breaks.
 */
import { formatError } from '../base/errors.js';
import type { FleetEvent, FleetEventOf, FleetEventType } from './fleet-types.js';

/** Where the fleet's events go. */
export class FleetEventBus {
  readonly #warn: ((message: string) => void) | undefined;
  readonly #listeners = new Map<FleetEventType, Set<(event: FleetEvent) => void>>();
  readonly #subscribers = new Set<(event: FleetEvent | undefined) => void>();

  /** `warn` hears of listeners that throw. */
  constructor(warn: ((message: string) => void) | undefined) {
    this.#warn = warn;
  }

  /** Calls `listener` for each event of `type`; returns the function that stops it. */
  on<T extends FleetEventType>(type: T, listener: (event: FleetEventOf<T>) => void): () => void {
    let set = this.#listeners.get(type);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(type, set);
    }
    const wrapped = listener as (event: FleetEvent) => void;
    set.add(wrapped);
    return () => set.delete(wrapped);
  }

  /** Hands `event` to the listeners of its type, then to every iterator. */
  emit(event: FleetEvent): void {
    for (const listener of this.#listeners.get(event.type) ?? []) {
      try {
        listener(event);
      } catch (error) {
        this.#warn?.(`a fleet ${event.type} listener failed: ${formatError(error)}`);
      }
    }
    for (const subscriber of this.#subscribers) subscriber(event);
  }

  /**
   * The events from now on as an async iterator, starting with `replay`. With `ended` (the fleet is closing) it
   * yields `replay` and ends. Ends when {@link end} is called, `signal` aborts or the loop breaks.
   */
  subscribe(options: {
    replay: readonly FleetEvent[];
    ended: boolean;
    signal?: AbortSignal | undefined;
  }): AsyncIterableIterator<FleetEvent> {
    const queue: FleetEvent[] = [...options.replay];
    let wake: (() => void) | undefined;
    let done = options.ended;
    const push = (event: FleetEvent | undefined): void => {
      if (event === undefined) done = true;
      else queue.push(event);
      wake?.();
    };
    const finish = (): void => {
      done = true;
      this.#subscribers.delete(push);
      options.signal?.removeEventListener('abort', finish);
      wake?.();
    };
    if (!done) this.#subscribers.add(push);
    if (options.signal?.aborted === true) finish();
    else options.signal?.addEventListener('abort', finish, { once: true });
    const iterator: AsyncIterableIterator<FleetEvent> = {
      next: async () => {
        for (;;) {
          const event = queue.shift();
          if (event !== undefined) return { value: event, done: false };
          if (done) {
            finish();
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
        }
      },
      return: async () => {
        finish();
        queue.length = 0;
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  }

  /** Ends every iterator (each yields what it has queued, then ends). */
  end(): void {
    for (const subscriber of this.#subscribers) subscriber(undefined);
    this.#subscribers.clear();
  }
}
