/**
 * The fleet's credential slots: one slot per plugin input (what {@link execCacheKey} keys: members whose plugin sees
 * the same input share one credential), fetched by the in-process fetcher when the providers file's command is one of
 * this package's plugins (or the user registered a provider for the provider's name) and by the exec fetcher
 * otherwise; every fetch bounded (concurrent fetches, concurrent plugin processes, a deadline), refreshed ahead of
 * expiry with jitter by the refresh scheduler, retried with backoff per slot. A slot records each fetch's outcome.
 */
import { CredentialsError, isCredentialsError } from '../../base/errors.js';
import type { Env } from '../../base/io.js';
import { sha256HexNative } from '../../base/sha256.js';
import {
  ExecAuthenticator,
  ExecCredentialCache,
  execCacheKey,
  type ExecAuthenticatorOptions,
} from '../../exec/authenticator.js';
import type { ExecCredential } from '../../exec/output.js';
import type { AccessConfig, ExecCluster, ExecConfig, ResolvedClusterAccess } from '../../resolve/types.js';
import type { AnyCredentialProvider, CredentialMode } from '../fleet-types.js';
import type { FleetClock } from '../scheduler/clock.js';
import { RefreshScheduler } from '../scheduler/refresh-scheduler.js';
import { backoffDelay, refreshTime, type RefreshPolicy } from '../scheduler/refresh-time.js';
import { Semaphore } from '../scheduler/semaphore.js';
import { ExecFetcher } from './exec-fetcher.js';
import { InProcessFetcher, type InProcessPlan } from './in-process-fetcher.js';

/** One credential of the fleet: a plugin input and what is known about its credential. */
export interface CredentialSlot {
  /** SHA-256 of the plugin input's exec cache key. */
  readonly key: string;
  /** The providers-file entry's name (the metrics label). */
  readonly providerName: string;
  readonly mode: CredentialMode;
  readonly authenticator: ExecAuthenticator;
  /** The in-process provider and its argv as the binary's parser read them (mode `in-process`; shared by slots). */
  readonly plan: InProcessPlan | undefined;
  /** The plugin's `spec.cluster` (for messages: the member it serves). */
  readonly cluster: ExecCluster;
  /** Members holding it. */
  refs: number;
  credential: ExecCredential | undefined;
  obtainedAt: number | undefined;
  /** Consecutive failures; 0 after a success. */
  failures: number;
  lastError: unknown;
  /** After a failure: no fetch a request asks for before this time (epoch ms). */
  retryAt: number | undefined;
  /** Attempts so far (successful or not). */
  fetches: number;
  /** The next fetch is the scheduler's (it may force past the shared cache). */
  scheduled: boolean;
  closed: boolean;
}

/** What a fetch did, for metrics. */
export interface FetchRecord {
  providerName: string;
  mode: CredentialMode;
  seconds: number;
  /** The error code of a failure (`uncoded` for an uncoded error). */
  failure?: string;
  /** The plugin or provider hit its deadline (killed, or abandoned). */
  timedOut: boolean;
}

export interface FleetCredentialsOptions {
  env: Env;
  clock: FleetClock;
  random: () => number;
  policy: RefreshPolicy;
  maxConcurrentFetches: number;
  maxConcurrentProcesses: number;
  /** Deadline of one fetch: an in-process provider is aborted, a plugin process killed. */
  fetchTimeoutMs: number;
  /** Providers for provider names (the providers file's `name`), used in-process whatever their command. */
  providers: Readonly<Record<string, AnyCredentialProvider>>;
  /** Obtain our own plugins' credentials in-process (default true); false runs every plugin as a process. */
  inProcess: boolean;
  /** A plugin process's stderr. */
  onStderr?: (text: string) => void;
  /** After each fetch of a slot: `error` undefined on success. */
  onResult(slot: CredentialSlot, error: unknown): void;
  onFetch(record: FetchRecord): void;
}

/** The slots, their cache, the scheduler that refreshes them and the bounds on their fetches. */
export class FleetCredentials {
  /** The cache every member client authenticates through; its `run` is this class's fetch. */
  readonly cache: ExecCredentialCache;
  readonly #options: FleetCredentialsOptions;
  readonly #slots = new Map<string, CredentialSlot>();
  readonly #scheduler: RefreshScheduler;
  readonly #fetches: Semaphore;
  readonly #processes: Semaphore;
  readonly #inProcess: InProcessFetcher;
  readonly #exec: ExecFetcher;
  readonly #authenticatorOptions: ExecAuthenticatorOptions;
  /** Aborted by {@link close}: plugin processes still running are killed (a closing CLI would orphan them). */
  readonly #closing = new AbortController();

  constructor(options: FleetCredentialsOptions) {
    this.#options = options;
    this.#fetches = new Semaphore(options.maxConcurrentFetches);
    this.#processes = new Semaphore(options.maxConcurrentProcesses);
    this.#inProcess = new InProcessFetcher({
      env: options.env,
      clock: options.clock,
      fetchTimeoutMs: options.fetchTimeoutMs,
      providers: options.providers,
      inProcess: options.inProcess,
      fetches: this.#fetches,
    });
    this.#exec = new ExecFetcher({
      env: options.env,
      fetchTimeoutMs: options.fetchTimeoutMs,
      ...(options.onStderr === undefined ? {} : { onStderr: options.onStderr }),
      fetches: this.#fetches,
      processes: this.#processes,
      signal: this.#closing.signal,
    });
    this.#scheduler = new RefreshScheduler({
      clock: options.clock,
      // Twice the fetch bound: the next ones wait at the semaphore, so a place that frees up is taken at once.
      maxStarted: 2 * options.maxConcurrentFetches,
      isLive: (key) => this.#slots.get(key)?.closed === false,
      start: (key) => this.#refresh(key),
    });
    this.#authenticatorOptions = {
      run: (exec, cluster) => this.#run(exec, cluster),
      now: () => options.clock.now(),
      env: options.env,
      timeoutMs: options.fetchTimeoutMs,
      // The scheduler refreshes ahead of expiry; the authenticator's own margin only matters when it fails.
      refreshMarginMs: options.policy.marginMs,
    };
    this.cache = new SlotCache(
      this.#authenticatorOptions,
      (exec, cluster) => this.#slots.get(slotKey(exec, cluster))?.authenticator,
    );
  }

  /** Bounds in use, for status. */
  get load(): { fetching: number; waiting: number; processes: number; scheduled: number } {
    return {
      fetching: this.#fetches.held,
      waiting: this.#fetches.waiting + this.#processes.waiting + this.#scheduler.waiting,
      processes: this.#processes.held,
      scheduled: this.#scheduler.scheduled,
    };
  }

  get size(): number {
    return this.#slots.size;
  }

  /** Loads this package's providers the providers file names, so that {@link acquire} stays synchronous. */
  prepare(accessConfig: AccessConfig): Promise<void> {
    return this.#inProcess.prepare(accessConfig);
  }

  /**
   * The slot of a member's access, made (and its first fetch queued) if it is new. Throws `ERR_PLUGIN_USAGE`
   * (path = the flag) when an in-process provider cannot parse the providers file's args.
   */
  acquire(access: ResolvedClusterAccess): CredentialSlot {
    const key = slotKey(access.exec, access.cluster);
    const existing = this.#slots.get(key);
    if (existing !== undefined) {
      existing.refs += 1;
      return existing;
    }
    const plan = this.#inProcess.plan(access);
    const slot: CredentialSlot = {
      key,
      providerName: access.providerName,
      mode: plan === undefined ? 'exec' : 'in-process',
      authenticator: new ExecAuthenticator(access.exec, access.cluster, this.#authenticatorOptions),
      plan,
      cluster: access.cluster,
      refs: 1,
      credential: undefined,
      obtainedAt: undefined,
      failures: 0,
      lastError: undefined,
      retryAt: undefined,
      fetches: 0,
      scheduled: false,
      closed: false,
    };
    this.#slots.set(key, slot);
    this.#scheduler.schedule(key, this.#options.clock.now());
    return slot;
  }

  /** A member lets go of its slot; the last one closes it: no more refreshes, the credential forgotten. */
  release(slot: CredentialSlot): void {
    slot.refs -= 1;
    if (slot.refs > 0 || slot.closed) return;
    slot.closed = true;
    this.#slots.delete(slot.key);
    this.#scheduler.cancel(slot.key);
    slot.authenticator.clear();
    slot.credential = undefined;
  }

  /** When the scheduler fetches `slot` next (epoch ms). */
  dueAt(slot: CredentialSlot): number | undefined {
    return this.#scheduler.dueAt(slot.key);
  }

  /** Every live slot. */
  slots(): IterableIterator<CredentialSlot> {
    return this.#slots.values();
  }

  close(): void {
    this.#closing.abort(new CredentialsError('ERR_FLEET_CLOSED', 'the fleet was closed', { path: 'close()' }));
    this.#scheduler.close();
    for (const slot of this.#slots.values()) slot.closed = true;
    for (const slot of this.#slots.values()) slot.authenticator.clear();
    this.#slots.clear();
  }

  /** The scheduler's turn for a slot: a fetch even if its credential is still fresh (the next one is the scheduler's). */
  #refresh(key: string): Promise<ExecCredential> {
    const slot = this.#slots.get(key)!;
    slot.scheduled = true;
    slot.authenticator.clear();
    return slot.authenticator.getCredential();
  }

  /** The authenticator's run: one fetch of the slot's credential, recorded and scheduled. */
  async #run(exec: ExecConfig, cluster: ExecCluster | undefined): Promise<ExecCredential> {
    const { clock } = this.#options;
    const key = slotKey(exec, cluster);
    const slot = this.#slots.get(key);
    if (slot === undefined || slot.closed) {
      throw new CredentialsError(
        'ERR_FLEET_CLOSED',
        `the cluster at ${cluster?.server ?? exec.command} is no longer in the fleet`,
        { path: cluster?.server ?? exec.command },
      );
    }
    const scheduled = slot.scheduled;
    slot.scheduled = false;
    // A request between failures does not run the plugin again before the backoff is over: it gets the credential
    // the slot still holds while that is valid, else the last error.
    if (!scheduled && slot.retryAt !== undefined && clock.now() < slot.retryAt && slot.lastError !== undefined) {
      if (this.#valid(slot.credential)) return slot.credential;
      throw slot.lastError;
    }
    // A fetch a request started serves a refresh that came due and still waits for a place.
    this.#scheduler.cancel(key);
    slot.fetches += 1;
    const started = clock.now();
    const startedHr = performance.now();
    let timedOut = false;
    try {
      const credential =
        slot.plan === undefined
          ? await this.#exec.fetch(exec, cluster)
          : await this.#inProcess.fetch(slot, slot.plan, exec, cluster, () => (timedOut = true));
      if (slot.closed) return credential;
      const now = clock.now();
      slot.credential = credential;
      slot.obtainedAt = now;
      slot.failures = 0;
      slot.lastError = undefined;
      slot.retryAt = undefined;
      const margin =
        slot.plan === undefined ? this.#options.policy.marginMs : (slot.plan.provider.minRemainingSeconds ?? 60) * 1000;
      const at = refreshTime(
        now,
        credential.expiresAt,
        { ...this.#options.policy, marginMs: margin },
        this.#options.random,
      );
      if (at !== undefined) this.#scheduler.schedule(key, at);
      this.#options.onFetch({
        providerName: slot.providerName,
        mode: slot.mode,
        seconds: (performance.now() - startedHr) / 1000,
        timedOut: false,
      });
      this.#options.onResult(slot, undefined);
      return credential;
    } catch (error) {
      timedOut ||= isCredentialsError(error) && error.code === 'ERR_EXEC_TIMEOUT';
      this.#options.onFetch({
        providerName: slot.providerName,
        mode: slot.mode,
        seconds: (performance.now() - startedHr) / 1000,
        failure: isCredentialsError(error) ? error.code : 'uncoded',
        timedOut,
      });
      if (!slot.closed) {
        slot.failures += 1;
        slot.lastError = error;
        slot.retryAt =
          Math.max(started, clock.now()) + backoffDelay(slot.failures, this.#options.policy, this.#options.random);
        this.#scheduler.schedule(key, slot.retryAt);
        this.#options.onResult(slot, error);
        // A refresh ahead of expiry that failed leaves the member on the credential it has until that expires.
        if (this.#valid(slot.credential)) return slot.credential;
      }
      throw error;
    }
  }

  #valid(credential: ExecCredential | undefined): credential is ExecCredential {
    return (
      credential !== undefined &&
      (credential.expiresAt === undefined || credential.expiresAt > this.#options.clock.now())
    );
  }
}

/**
 * The cache member clients authenticate through: each plugin input's authenticator is its slot's (one map, keyed by
 * a hash, instead of a second map keyed by the whole input, CA bundle included). An input the fleet has no slot for
 * (a removed member's client) gets an authenticator of its own whose fetch is refused (ERR_FLEET_CLOSED).
 */
class SlotCache extends ExecCredentialCache {
  readonly #options: ExecAuthenticatorOptions;
  readonly #lookup: (exec: ExecConfig, cluster: ExecCluster | undefined) => ExecAuthenticator | undefined;

  constructor(
    options: ExecAuthenticatorOptions,
    lookup: (exec: ExecConfig, cluster: ExecCluster | undefined) => ExecAuthenticator | undefined,
  ) {
    super(options);
    this.#options = options;
    this.#lookup = lookup;
  }

  override authenticatorFor(exec: ExecConfig, cluster: ExecCluster | undefined): ExecAuthenticator {
    return this.#lookup(exec, cluster) ?? new ExecAuthenticator(exec, cluster, this.#options);
  }

  /** Slots are forgotten by {@link FleetCredentials.release}. */
  override forget(exec: ExecConfig, cluster: ExecCluster | undefined): boolean {
    const authenticator = this.#lookup(exec, cluster);
    authenticator?.clear();
    return authenticator !== undefined;
  }
}

/** A slot's key: the hash of the exec cache's key (that one holds the cluster's CA, and a fleet holds a key per slot). */
function slotKey(exec: ExecConfig, cluster: ExecCluster | undefined): string {
  return sha256HexNative(execCacheKey(exec, cluster));
}
