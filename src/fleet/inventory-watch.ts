/**
 * The list/watch loop that drives reconciliation: the inventory namespace is listed (paged) and watched from the
 * list's resourceVersion with bookmarks, each profile handed to {@link FleetMembers}. A watch that breaks is reopened
 * from the last resourceVersion, and one whose resourceVersion is gone (410) lists again, keeping every member whose
 * access did not change. A hub that fails is retried with backoff and reported (`hubError`).
 */
import { isCredentialsError } from '../base/errors.js';
import type { FleetEventBus } from './events.js';
import { HubGoneError, type HubConnection, type HubWatchEvent } from './hub-connection.js';
import type { FleetMembers } from './members.js';
import type { FleetMetrics } from './metrics.js';
import type { FleetClock } from './scheduler/clock.js';
import { backoffDelay, DEFAULT_REFRESH_POLICY, type RefreshPolicy } from './scheduler/refresh-time.js';

/** Retries of a failing hub: from 1 s, doubling, at most 30 s apart. */
const HUB_BACKOFF: RefreshPolicy = { ...DEFAULT_REFRESH_POLICY, backoffBaseMs: 1_000, backoffMaxMs: 30_000 };

export interface InventoryWatchOptions {
  /** The inventory: the namespace of ClusterProfiles on the hub. */
  namespace: string;
  hub: HubConnection;
  members: FleetMembers;
  events: FleetEventBus;
  metrics: FleetMetrics;
  clock: FleetClock;
  random: () => number;
  /** Aborted when the fleet closes: the loop ends, a list in progress applies nothing more. */
  signal: AbortSignal;
}

/** One inventory's list and watch, for the life of the fleet. */
export class InventoryWatch {
  readonly #options: InventoryWatchOptions;
  #resourceVersion: string | undefined;
  #relists = 0;
  #hubError: unknown;
  #loop: Promise<void> | undefined;

  constructor(options: InventoryWatchOptions) {
    this.#options = options;
  }

  /** Where the watch resumes (the last resourceVersion seen); undefined until listed, and while a relist is due. */
  get resourceVersion(): string | undefined {
    return this.#resourceVersion;
  }

  /** Full lists after the first. */
  get relists(): number {
    return this.#relists;
  }

  /** The last hub failure, until a watch event arrives again. */
  get hubError(): unknown {
    return this.#hubError;
  }

  /** The loop {@link start} started; it ends when the signal aborts. */
  get loop(): Promise<void> | undefined {
    return this.#loop;
  }

  /** The first list, applied; rejects with the hub's coded error. */
  async listFirst(): Promise<void> {
    this.#resourceVersion = await this.#listAll();
  }

  /** Starts the watch loop (after {@link listFirst}). */
  start(): void {
    this.#loop = this.#watchLoop();
  }

  async #watchLoop(): Promise<void> {
    const { hub, signal, clock, random, metrics, events, namespace } = this.#options;
    let failures = 0;
    let quiet = 0;
    while (!signal.aborted) {
      try {
        if (this.#resourceVersion === undefined) {
          this.#relists += 1;
          metrics.relist();
          const resourceVersion = await this.#listAll();
          if (signal.aborted) break;
          this.#resourceVersion = resourceVersion;
        }
        const opened = clock.now();
        const seen = await hub.watch(namespace, this.#resourceVersion, signal, (event) => {
          this.#onWatchEvent(event);
          failures = 0;
          this.#hubError = undefined;
        });
        if (signal.aborted) break;
        // A watch that ends at once with nothing to say (a hub cutting every stream) is not reopened in a tight loop.
        if (seen === 0 && clock.now() - opened < 1_000) {
          quiet += 1;
          await this.#sleep(backoffDelay(quiet, HUB_BACKOFF, random));
        } else {
          quiet = 0;
        }
      } catch (error) {
        if (signal.aborted) break;
        if (error instanceof HubGoneError) {
          this.#resourceVersion = undefined;
          continue;
        }
        failures += 1;
        this.#hubError = error;
        metrics.watchError(isCredentialsError(error) ? error.code : 'uncoded');
        events.emit({ type: 'hubError', error, failures });
        await this.#sleep(backoffDelay(failures, HUB_BACKOFF, random));
      }
    }
  }

  #onWatchEvent(event: HubWatchEvent): void {
    const metadata = event.object['metadata'] as { name?: unknown; resourceVersion?: unknown } | undefined;
    if (typeof metadata?.resourceVersion === 'string' && metadata.resourceVersion !== '')
      this.#resourceVersion = metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return;
    const name = metadata?.name;
    if (typeof name !== 'string' || name === '') return;
    if (event.type === 'DELETED') this.#options.members.remove(name, 'deleted');
    else this.#options.members.apply(name, event.object);
  }

  /** Waits `ms`, or less if the fleet closes. */
  #sleep(ms: number): Promise<void> {
    const { clock, signal } = this.#options;
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
        return;
      }
      const done = (): void => {
        signal.removeEventListener('abort', done);
        clock.clearTimer(handle);
        resolve();
      };
      const handle = clock.setTimer(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /**
   * A full list, applied page by page: every item applied, then every member the list no longer has removed.
   * Resolves with the list's resourceVersion.
   */
  async #listAll(): Promise<string> {
    const { hub, signal, members, namespace } = this.#options;
    let seen = new Set<string>();
    const { resourceVersion } = await hub.list(namespace, signal, {
      onStart: () => {
        seen = new Set();
      },
      onPage: (items) => {
        // The fleet closed (it aborts the signal as it closes).
        if (signal.aborted) return;
        for (const item of items) {
          const name = (item as { metadata?: { name?: unknown } } | null)?.metadata?.name;
          if (typeof name !== 'string' || name === '') continue;
          seen.add(name);
          members.apply(name, item);
        }
      },
    });
    if (!signal.aborted) members.removeAllBut(seen);
    return resourceVersion;
  }
}
