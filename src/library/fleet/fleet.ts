/**
 * {@link ClusterProfileFleet}: one inventory (a namespace of ClusterProfiles on the hub, KEP-4322) kept as one live
 * client per member cluster.
 *
 * - The namespace is listed (paged) and watched from the list's resourceVersion with bookmarks; a watch that breaks
 *   is reopened from the last resourceVersion, and one whose resourceVersion is gone (410) lists again, keeping every
 *   member whose access did not change. A hub that fails is retried with backoff and reported (`hubError`).
 * - Each profile is resolved with the providers file (resolveClusterAccess); its client (a ClusterProfileKubeConfig)
 *   is rebuilt only when the resolved access changes as data (SHA-256 of its canonical JSON), so a status-only update
 *   (a condition's lastTransitionTime) rebuilds nothing. A profile that fails resolution is that member's state with
 *   its coded error; it never stops the loop.
 * - Credentials: one slot per plugin input (./credentials.ts), in-process for this package's plugins, refreshed ahead
 *   of expiry with jitter, retried with backoff, bounded in concurrency; one failing member never delays the others.
 * - A member is engaged (`added`) once it has a credential (and, with `requireHealthy`, ControlPlaneHealthy is True);
 *   it stays engaged until its profile is deleted or becomes invalid (`removed`), or, with `disengageUnhealthy`,
 *   until ControlPlaneHealthy turns False.
 */
import { createHash } from 'node:crypto';
import { CredentialsError, formatError, isCredentialsError } from '../../core/errors.js';
import { canonicalJson } from '../../core/canonical-json.js';
import type { Env } from '../../core/io.js';
import type { KubeAccess } from '../../kube/kubeconfig.js';
import type { ClusterProfileKubeConfig } from '../build-config.js';
import { resolveClusterAccess } from '../resolve.js';
import type { AccessConfig, ClusterProfile, ResolvedClusterAccess } from '../types.js';
import { builtinPluginOf, type AnyCredentialProvider } from './credentials/builtin-plugins.js';
import { FleetCredentials, type CredentialMode, type CredentialSlot } from './credentials/slots.js';
import { HubConnection, HubGoneError, type FleetHubOptions, type HubWatchEvent } from './hub-connection.js';
import { FleetMetrics } from './metrics.js';
import { systemClock, type FleetClock } from './scheduler/clock.js';
import { backoffDelay, DEFAULT_REFRESH_POLICY, type RefreshPolicy } from './scheduler/refresh-time.js';

/** A member's state: `invalid` (its profile does not resolve), `pending` (first credential on its way), `failing`
 * (no usable credential, the last fetch failed), `unhealthy` (ControlPlaneHealthy is not True), `ready`. */
export type FleetClusterState = 'pending' | 'ready' | 'unhealthy' | 'failing' | 'invalid';
export const FLEET_CLUSTER_STATES: readonly FleetClusterState[] = [
  'pending',
  'ready',
  'unhealthy',
  'failing',
  'invalid',
];

/** The ControlPlaneHealthy condition as the profile states it. */
export interface HealthCondition {
  status: string;
  reason?: string;
  message?: string;
}

/** One member cluster of the fleet, as the fleet sees it now (a live view: read it again for the current state). */
export interface FleetMember {
  readonly name: string;
  readonly namespace: string;
  readonly state: FleetClusterState;
  /** Between its `added` and `removed` events. */
  readonly engaged: boolean;
  /** The providers-file entry chosen; undefined when the profile does not resolve. */
  readonly providerName: string | undefined;
  readonly mode: CredentialMode | undefined;
  /** What the profile resolved to. */
  readonly access: ResolvedClusterAccess | undefined;
  /** The client (undefined when the profile does not resolve, or the fleet was made with `clients: false`). */
  readonly client: ClusterProfileKubeConfig | undefined;
  /** The resolution error of an invalid profile, else the last credential error (cleared by a success). */
  readonly error: unknown;
  /** ControlPlaneHealthy: true, false, or undefined when the profile has no such condition. */
  readonly healthy: boolean | undefined;
  /** Expiry of the credential held (epoch ms); undefined before the first one or when it never expires. */
  readonly credentialExpiresAt: number | undefined;
  /** Times the client was rebuilt because the resolved access changed. */
  readonly rebuilds: number;
  /** Credential fetches of its plugin input (successful or not; shared by members with the same input). */
  readonly fetches: number;
}

export type FleetEvent =
  | { type: 'added'; name: string; member: FleetMember }
  /** The resolved access changed: `member.client` is a new client; the previous one is closed. */
  | { type: 'updated'; name: string; member: FleetMember; previousClient: ClusterProfileKubeConfig | undefined }
  | { type: 'removed'; name: string; reason: 'deleted' | 'invalid' | 'unhealthy' | 'closed' }
  | { type: 'unhealthy'; name: string; member: FleetMember; condition: HealthCondition | undefined }
  | {
      type: 'credentialError';
      name: string;
      member: FleetMember;
      error: unknown;
      failures: number;
      retryAt: number | undefined;
    }
  /** The profile does not resolve (bad profile, no matching provider, bad exec args): the member has no client. */
  | { type: 'invalid'; name: string; member: FleetMember; error: unknown }
  /** Listing or watching the hub failed; retried with backoff. */
  | { type: 'hubError'; error: unknown; failures: number };

export type FleetEventType = FleetEvent['type'];
export type FleetEventOf<T extends FleetEventType> = Extract<FleetEvent, { type: T }>;

/** One member's row of {@link ClusterProfileFleet.status}: plain data (JSON-ready). */
export interface FleetClusterStatus {
  name: string;
  state: FleetClusterState;
  engaged: boolean;
  provider?: string;
  mode?: CredentialMode;
  healthy?: boolean;
  /** RFC 3339. */
  credentialExpiresAt?: string;
  /** When the scheduler fetches its credential next (RFC 3339). */
  nextFetchAt?: string;
  lastError?: { code: string; message: string };
  fetches: number;
  rebuilds: number;
}

export interface FleetStatus {
  namespace: string;
  hub: {
    server: string | undefined;
    /** The ClusterProfile version served (v1alpha1, else v1alpha2). */
    version: string | undefined;
    resourceVersion: string | undefined;
    synced: boolean;
    relists: number;
    lastError?: { code: string; message: string };
  };
  counts: Record<FleetClusterState, number>;
  /** Credential fetches under way, waiting, plugin processes running, refreshes scheduled. */
  credentials: { slots: number; fetching: number; waiting: number; processes: number; scheduled: number };
  clusters: FleetClusterStatus[];
}

export interface ClusterProfileFleetOptions {
  /** The inventory: the namespace of ClusterProfiles on the hub. */
  namespace: string;
  /** The providers file (`loadAccessConfig`). */
  accessConfig: AccessConfig;
  /** Hub access: a kubeconfig and context, or access already loaded; default: KUBECONFIG, ~/.kube/config, in-cluster. */
  hub?: FleetHubOptions;
  /** Credential providers by provider name, used in-process whatever the providers file's command says. */
  providers?: Readonly<Record<string, AnyCredentialProvider>>;
  /** Obtain the credentials of this package's plugins in-process (default true); false runs them as processes. */
  inProcess?: boolean;
  /** Build a client-node client per member (default true; needs @kubernetes/client-node). */
  clients?: boolean;
  /** Engage a member only while its ControlPlaneHealthy condition is True (default false). */
  requireHealthy?: boolean;
  /** Disengage (`removed`) an engaged member whose ControlPlaneHealthy turns False (default false: report only). */
  disengageUnhealthy?: boolean;
  /** Credential fetches at once (default 16). */
  maxConcurrentFetches?: number;
  /** Plugin processes at once (default 4). */
  maxConcurrentProcesses?: number;
  /** Deadline of one credential fetch (default 30 s): a plugin process is killed, an in-process provider aborted. */
  fetchTimeoutMs?: number;
  /** Refresh and backoff timing (see {@link RefreshPolicy}). */
  refresh?: Partial<RefreshPolicy>;
  /** Most connections per member client (default: ClusterProfileKubeConfig's). */
  maxConnections?: number;
  /** The environment plugins and in-process providers see (default `process.env`); also the hub's kubeconfig order. */
  env?: Env;
  /** Relative paths of the hub kubeconfig resolve against this (default `process.cwd()`). */
  cwd?: string;
  /** Deprecation warnings of profiles and listener failures (default: none). */
  warn?: (message: string) => void;
  /** A plugin process's stderr (default: kept for its error message only). */
  onPluginStderr?: (text: string) => void;
  /** Clock and timers (tests freeze them). */
  clock?: FleetClock;
  /** Random source in [0, 1) for jitter. */
  random?: () => number;
}

const HUB_BACKOFF: RefreshPolicy = { ...DEFAULT_REFRESH_POLICY, backoffBaseMs: 1_000, backoffMaxMs: 30_000 };

type ClientConstructor = typeof ClusterProfileKubeConfig;

class Member implements FleetMember {
  readonly name: string;
  readonly namespace: string;
  readonly #fleet: ClusterProfileFleet;
  access: ResolvedClusterAccess | undefined;
  accessHash: string | undefined;
  invalid: unknown;
  slot: CredentialSlot | undefined;
  client: ClusterProfileKubeConfig | undefined;
  healthy: boolean | undefined;
  condition: HealthCondition | undefined;
  engaged = false;
  reportedUnhealthy = false;
  rebuilds = 0;

  constructor(fleet: ClusterProfileFleet, namespace: string, name: string) {
    this.#fleet = fleet;
    this.namespace = namespace;
    this.name = name;
  }

  get state(): FleetClusterState {
    return this.#fleet.stateOf(this);
  }

  get providerName(): string | undefined {
    return this.access?.providerName;
  }

  get mode(): CredentialMode | undefined {
    return this.slot?.mode;
  }

  get error(): unknown {
    return this.invalid ?? this.slot?.lastError;
  }

  get credentialExpiresAt(): number | undefined {
    return this.slot?.credential?.expiresAt;
  }

  get fetches(): number {
    return this.slot?.fetches ?? 0;
  }
}

/**
 * A live fleet over one inventory namespace of the hub.
 *
 * @example
 * ```ts
 * import { CoreV1Api } from '@kubernetes/client-node';
 * import { ClusterProfileFleet, loadAccessConfig } from 'clusterprofile-credentials';
 *
 * const fleet = new ClusterProfileFleet({ namespace: 'fleet', accessConfig: await loadAccessConfig('providers.json') });
 * await fleet.start();
 * for await (const event of fleet) {
 *   if (event.type === 'added' || event.type === 'updated') {
 *     const pods = await event.member.client!.makeApiClient(CoreV1Api).listPodForAllNamespaces();
 *     console.log(event.name, pods.items.length);
 *   }
 * }
 * ```
 */
export class ClusterProfileFleet implements AsyncIterable<FleetEvent> {
  readonly namespace: string;
  readonly #options: ClusterProfileFleetOptions;
  readonly #clock: FleetClock;
  readonly #random: () => number;
  readonly #credentials: FleetCredentials;
  readonly #metrics: FleetMetrics;
  readonly #members = new Map<string, Member>();
  /** Interned CA bundles. */
  readonly #strings = new Map<string, string>();
  /** Members by credential slot key. */
  readonly #bySlot = new Map<string, Set<Member>>();
  /** Slots whose first fetch has not ended yet. */
  readonly #unsettled = new Set<string>();
  #settledWaiters: (() => void)[] = [];
  readonly #listeners = new Map<FleetEventType, Set<(event: FleetEvent) => void>>();
  readonly #subscribers = new Set<(event: FleetEvent | undefined) => void>();
  readonly #stop = new AbortController();
  #hub: HubConnection | undefined;
  #Client: ClientConstructor | undefined;
  #loop: Promise<void> | undefined;
  #started = false;
  #closed = false;
  #synced = false;
  #resourceVersion: string | undefined;
  #relists = 0;
  #hubError: unknown;

  constructor(options: ClusterProfileFleetOptions) {
    if (
      typeof options.namespace !== 'string' ||
      !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(options.namespace) ||
      options.namespace.length > 63
    ) {
      throw new CredentialsError(
        'ERR_FLEET_OPTIONS',
        `the fleet's namespace must be a namespace name (a DNS-1123 label), got ${JSON.stringify(options.namespace)}`,
        {
          path: 'namespace',
        },
      );
    }
    if (typeof options.accessConfig !== 'object' || options.accessConfig === null) {
      throw new CredentialsError(
        'ERR_FLEET_OPTIONS',
        'the fleet needs the providers file: pass accessConfig (loadAccessConfig)',
        { path: 'accessConfig' },
      );
    }
    for (const [name, value] of Object.entries({
      maxConcurrentFetches: options.maxConcurrentFetches,
      maxConcurrentProcesses: options.maxConcurrentProcesses,
      fetchTimeoutMs: options.fetchTimeoutMs,
    })) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
        throw new CredentialsError(
          'ERR_FLEET_OPTIONS',
          `${name} must be a whole number of at least 1, got ${JSON.stringify(value)}`,
          { path: name },
        );
      }
    }
    this.namespace = options.namespace;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#metrics = new FleetMetrics({
      clustersByState: () => this.#counts(),
      secondsToNearestExpiry: () => this.#nearestExpiry(),
    });
    this.#credentials = new FleetCredentials({
      env: options.env ?? process.env,
      clock: this.#clock,
      random: this.#random,
      policy: { ...DEFAULT_REFRESH_POLICY, ...options.refresh },
      maxConcurrentFetches: options.maxConcurrentFetches ?? 16,
      maxConcurrentProcesses: options.maxConcurrentProcesses ?? 4,
      fetchTimeoutMs: options.fetchTimeoutMs ?? 30_000,
      providers: options.providers ?? {},
      inProcess: options.inProcess !== false,
      ...(options.onPluginStderr === undefined ? {} : { onStderr: options.onPluginStderr }),
      onResult: (slot, error) => this.#onCredential(slot, error),
      onFetch: (record) => this.#metrics.fetch(record),
    });
  }

  /**
   * Finds hub access, lists the inventory, builds a client per member and starts the watch. Resolves once the first
   * list is applied (credentials are then being fetched: see {@link settled}). Rejects with the hub's coded error
   * (`ERR_KUBECONFIG_*`, `ERR_FLEET_HUB_UNREACHABLE`, `ERR_FLEET_HUB_FORBIDDEN` naming the verb and resource,
   * `ERR_FLEET_HUB_REQUEST`); after that, hub failures are retried and reported as `hubError` events.
   */
  async start(): Promise<void> {
    if (this.#started)
      throw new CredentialsError('ERR_FLEET_OPTIONS', 'the fleet was already started', { path: 'start' });
    this.#started = true;
    this.#throwIfClosed();
    const env = this.#options.env ?? process.env;
    const hub = await HubConnection.open(this.#options.hub ?? {}, {
      env,
      cwd: this.#options.cwd ?? process.cwd(),
      random: this.#random,
    });
    this.#hub = hub;
    if (this.#options.clients !== false) {
      this.#Client = (await import('../build-config.js')).ClusterProfileKubeConfig;
    }
    await this.#credentials.prepare(this.#options.accessConfig);
    this.#throwIfClosed();
    this.#resourceVersion = await this.#listAll(hub);
    this.#throwIfClosed();
    this.#synced = true;
    this.#checkSettled();
    this.#loop = this.#watchLoop();
  }

  /** Resolves when every member has had its first credential fetch end (a credential or an error), or is invalid. */
  settled(): Promise<void> {
    if (this.#synced && this.#unsettled.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#settledWaiters.push(resolve));
  }

  /** The member `name`, if the inventory has it. */
  get(name: string): FleetMember | undefined {
    return this.#members.get(name);
  }

  /** Every member, in name order. */
  list(): FleetMember[] {
    return [...this.#members.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The fleet as plain data: the hub, counts by state, credential load, one row per member. */
  status(): FleetStatus {
    const hubError = this.#hubError;
    return {
      namespace: this.namespace,
      hub: {
        server: this.#hub?.server,
        version: this.#hub?.version,
        resourceVersion: this.#resourceVersion,
        synced: this.#synced,
        relists: this.#relists,
        ...(hubError === undefined ? {} : { lastError: errorSummary(hubError) }),
      },
      counts: this.#counts(),
      credentials: { slots: this.#credentials.size, ...this.#credentials.load },
      clusters: this.list().map((member) => this.#row(member as Member)),
    };
  }

  /** The metrics in Prometheus text format. */
  metrics(): Promise<string> {
    return this.#metrics.text();
  }

  /** The prom-client registry behind {@link metrics} (to merge into an application's own). */
  get metricsRegistry(): FleetMetrics['registry'] {
    return this.#metrics.registry;
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

  /**
   * The events from now on as an async iterator; with `replay` (default true) it starts with an `added` for each
   * member already engaged. Ends when the fleet closes, `signal` aborts or the loop breaks.
   */
  events(options: { replay?: boolean; signal?: AbortSignal } = {}): AsyncIterableIterator<FleetEvent> {
    const queue: FleetEvent[] = [];
    let wake: (() => void) | undefined;
    let done = this.#closed;
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
    if (options.replay !== false) {
      for (const member of this.list()) if (member.engaged) queue.push({ type: 'added', name: member.name, member });
    }
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

  [Symbol.asyncIterator](): AsyncIterator<FleetEvent> {
    return this.events();
  }

  /** Stops the watch and the refreshes, closes every client and forgets every credential; ends the iterators. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop.abort(new CredentialsError('ERR_FLEET_CLOSED', 'the fleet was closed'));
    await this.#loop;
    const closing: Promise<void>[] = [];
    for (const member of this.#members.values()) {
      if (member.engaged) {
        member.engaged = false;
        this.#emit({ type: 'removed', name: member.name, reason: 'closed' });
      }
      if (member.client !== undefined) closing.push(member.client.close().catch(() => undefined));
    }
    this.#members.clear();
    this.#bySlot.clear();
    this.#credentials.close();
    await Promise.all(closing);
    await this.#hub?.close();
    for (const subscriber of this.#subscribers) subscriber(undefined);
    this.#subscribers.clear();
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** @internal The state of a member (used by its `state` getter). */
  stateOf(member: Member): FleetClusterState {
    if (member.access === undefined) return 'invalid';
    if (this.#unhealthy(member)) return 'unhealthy';
    const slot = member.slot;
    if (slot === undefined) return 'pending';
    if (this.#usable(slot)) return 'ready';
    return slot.lastError === undefined ? 'pending' : 'failing';
  }

  // ------------------------------------------------------------------------------------------- the watch loop

  async #watchLoop(): Promise<void> {
    const hub = this.#hub!;
    const signal = this.#stop.signal;
    let failures = 0;
    let quiet = 0;
    while (!signal.aborted) {
      try {
        if (this.#resourceVersion === undefined) {
          this.#relists += 1;
          this.#metrics.relist();
          const resourceVersion = await this.#listAll(hub);
          if (signal.aborted) break;
          this.#resourceVersion = resourceVersion;
        }
        const opened = this.#clock.now();
        const seen = await hub.watch(this.namespace, this.#resourceVersion, signal, (event) => {
          this.#onWatchEvent(event);
          failures = 0;
          this.#hubError = undefined;
        });
        if (signal.aborted) break;
        // A watch that ends at once with nothing to say (a hub cutting every stream) is not reopened in a tight loop.
        if (seen === 0 && this.#clock.now() - opened < 1_000) {
          quiet += 1;
          await this.#sleep(backoffDelay(quiet, HUB_BACKOFF, this.#random));
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
        this.#metrics.watchError(isCredentialsError(error) ? error.code : 'uncoded');
        this.#emit({ type: 'hubError', error, failures });
        await this.#sleep(backoffDelay(failures, HUB_BACKOFF, this.#random));
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
    if (event.type === 'DELETED') this.#remove(name, 'deleted');
    else this.#apply(name, event.object);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const signal = this.#stop.signal;
      if (signal.aborted) {
        resolve();
        return;
      }
      const done = (): void => {
        signal.removeEventListener('abort', done);
        this.#clock.clearTimer(handle);
        resolve();
      };
      const handle = this.#clock.setTimer(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  // ------------------------------------------------------------------------------------------- members

  /**
   * A full list, applied page by page: every item applied, then every member the list no longer has removed.
   * Resolves with the list's resourceVersion.
   */
  async #listAll(hub: HubConnection): Promise<string> {
    let seen = new Set<string>();
    const { resourceVersion } = await hub.list(this.namespace, this.#stop.signal, {
      onStart: () => {
        seen = new Set();
      },
      onPage: (items) => {
        if (this.#closed) return;
        for (const item of items) {
          const name = (item as { metadata?: { name?: unknown } } | null)?.metadata?.name;
          if (typeof name !== 'string' || name === '') continue;
          seen.add(name);
          this.#apply(name, item);
        }
      },
    });
    if (!this.#closed) for (const name of [...this.#members.keys()]) if (!seen.has(name)) this.#remove(name, 'deleted');
    return resourceVersion;
  }

  /** A profile as the hub has it now: resolve, rebuild when the access changed, update health and engagement. */
  #apply(name: string, profile: unknown): void {
    let member = this.#members.get(name);
    if (member === undefined) {
      member = new Member(this, this.namespace, name);
      this.#members.set(name, member);
    }
    const condition = healthConditionOf(profile);
    member.condition = condition;
    member.healthy = condition === undefined ? undefined : condition.status === 'True';

    let access: ResolvedClusterAccess;
    let hash: string;
    try {
      access = resolveClusterAccess(
        profile as ClusterProfile,
        this.#options.accessConfig,
        this.#options.warn === undefined ? {} : { warn: this.#options.warn },
      );
      hash = sha256(canonicalJson(access));
      // Members of one inventory mostly share a CA: one string for all of them instead of a copy each.
      const ca = access.cluster['certificate-authority-data'];
      if (ca !== undefined) access.cluster['certificate-authority-data'] = this.#intern(ca);
    } catch (error) {
      this.#invalidate(member, error);
      return;
    }
    if (member.accessHash === hash) {
      this.#reconcile(member);
      return;
    }
    let slot: CredentialSlot;
    try {
      slot = this.#credentials.acquire(access);
    } catch (error) {
      this.#invalidate(member, error);
      return;
    }
    const previousClient = member.client;
    const previousSlot = member.slot;
    const rebuilt = member.access !== undefined;
    member.access = access;
    member.accessHash = hash;
    member.invalid = undefined;
    member.client =
      this.#Client === undefined ? undefined : new this.#Client(access, this.#credentials.cache, this.#clientOptions());
    this.#attach(member, slot);
    if (previousSlot !== undefined) this.#detach(member, previousSlot);
    if (previousClient !== undefined) void previousClient.close().catch(() => undefined);
    if (rebuilt) {
      member.rebuilds += 1;
      this.#metrics.rebuild();
      if (member.engaged) this.#emit({ type: 'updated', name, member, previousClient });
    }
    this.#reconcile(member);
  }

  #intern(text: string): string {
    const known = this.#strings.get(text);
    if (known !== undefined) return known;
    if (this.#strings.size >= 1024) this.#strings.clear();
    this.#strings.set(text, text);
    return text;
  }

  #clientOptions(): { maxConnections?: number } {
    return this.#options.maxConnections === undefined ? {} : { maxConnections: this.#options.maxConnections };
  }

  /** The profile no longer resolves: no client, no credential; `removed` if it was engaged, then `invalid`. */
  #invalidate(member: Member, error: unknown): void {
    const known =
      member.accessHash === undefined &&
      member.invalid !== undefined &&
      errorSummary(member.invalid).message === errorSummary(error).message;
    this.#teardown(member);
    member.access = undefined;
    member.accessHash = undefined;
    member.invalid = error;
    if (member.engaged) {
      member.engaged = false;
      this.#emit({ type: 'removed', name: member.name, reason: 'invalid' });
    }
    if (!known) this.#emit({ type: 'invalid', name: member.name, member, error });
  }

  #remove(name: string, reason: 'deleted'): void {
    const member = this.#members.get(name);
    if (member === undefined) return;
    this.#members.delete(name);
    this.#teardown(member);
    if (member.engaged) {
      member.engaged = false;
      this.#emit({ type: 'removed', name, reason });
    }
    this.#checkSettled();
  }

  /** Closes the member's client and lets go of its credential (forgotten when no other member shares it). */
  #teardown(member: Member): void {
    const client = member.client;
    member.client = undefined;
    if (member.slot !== undefined) this.#detach(member, member.slot);
    member.slot = undefined;
    if (client !== undefined) void client.close().catch(() => undefined);
  }

  #attach(member: Member, slot: CredentialSlot): void {
    member.slot = slot;
    let members = this.#bySlot.get(slot.key);
    if (members === undefined) {
      members = new Set();
      this.#bySlot.set(slot.key, members);
    }
    members.add(member);
    if (slot.fetches === 0 && slot.credential === undefined && slot.lastError === undefined)
      this.#unsettled.add(slot.key);
  }

  #detach(member: Member, slot: CredentialSlot): void {
    const members = this.#bySlot.get(slot.key);
    members?.delete(member);
    if (members !== undefined && members.size === 0) {
      this.#bySlot.delete(slot.key);
      this.#unsettled.delete(slot.key);
    }
    this.#credentials.release(slot);
  }

  #onCredential(slot: CredentialSlot, error: unknown): void {
    this.#unsettled.delete(slot.key);
    const members = this.#bySlot.get(slot.key);
    if (members !== undefined) {
      for (const member of members) {
        if (error !== undefined) {
          this.#emit({
            type: 'credentialError',
            name: member.name,
            member,
            error,
            failures: slot.failures,
            retryAt: slot.retryAt,
          });
        }
        this.#reconcile(member);
      }
    }
    this.#checkSettled();
  }

  #checkSettled(): void {
    if (!this.#synced || this.#unsettled.size > 0) return;
    for (const resolve of this.#settledWaiters.splice(0)) resolve();
  }

  #usable(slot: CredentialSlot): boolean {
    const credential = slot.credential;
    return credential !== undefined && (credential.expiresAt === undefined || credential.expiresAt > this.#clock.now());
  }

  #unhealthy(member: Member): boolean {
    return this.#options.requireHealthy === true ? member.healthy !== true : member.healthy === false;
  }

  /** Engagement and health reports after anything about the member changed. */
  #reconcile(member: Member): void {
    if (member.access === undefined) return;
    const unhealthy = this.#unhealthy(member);
    if (unhealthy && !member.reportedUnhealthy) {
      member.reportedUnhealthy = true;
      this.#emit({ type: 'unhealthy', name: member.name, member, condition: member.condition });
    } else if (!unhealthy) {
      member.reportedUnhealthy = false;
    }
    if (!member.engaged) {
      const gated = unhealthy && (this.#options.requireHealthy === true || this.#options.disengageUnhealthy === true);
      if (!gated && member.slot !== undefined && this.#usable(member.slot)) {
        member.engaged = true;
        this.#emit({ type: 'added', name: member.name, member });
      }
    } else if (unhealthy && this.#options.disengageUnhealthy === true) {
      member.engaged = false;
      this.#emit({ type: 'removed', name: member.name, reason: 'unhealthy' });
    }
  }

  #emit(event: FleetEvent): void {
    for (const listener of this.#listeners.get(event.type) ?? []) {
      try {
        listener(event);
      } catch (error) {
        this.#options.warn?.(`a fleet ${event.type} listener failed: ${formatError(error)}`);
      }
    }
    for (const subscriber of this.#subscribers) subscriber(event);
  }

  #counts(): Record<FleetClusterState, number> {
    const counts = Object.fromEntries(FLEET_CLUSTER_STATES.map((state) => [state, 0])) as Record<
      FleetClusterState,
      number
    >;
    for (const member of this.#members.values()) counts[this.stateOf(member)] += 1;
    return counts;
  }

  #nearestExpiry(): number | undefined {
    let nearest: number | undefined;
    for (const slot of this.#credentials.slots()) {
      const at = slot.credential?.expiresAt;
      if (at !== undefined && (nearest === undefined || at < nearest)) nearest = at;
    }
    return nearest === undefined ? undefined : (nearest - this.#clock.now()) / 1000;
  }

  #row(member: Member): FleetClusterStatus {
    const row: FleetClusterStatus = {
      name: member.name,
      state: this.stateOf(member),
      engaged: member.engaged,
      fetches: member.fetches,
      rebuilds: member.rebuilds,
    };
    if (member.providerName !== undefined) row.provider = member.providerName;
    if (member.mode !== undefined) row.mode = member.mode;
    if (member.healthy !== undefined) row.healthy = member.healthy;
    const expires = member.credentialExpiresAt;
    if (expires !== undefined) row.credentialExpiresAt = new Date(expires).toISOString();
    const due = member.slot === undefined ? undefined : this.#credentials.dueAt(member.slot);
    if (due !== undefined) row.nextFetchAt = new Date(due).toISOString();
    const error = member.error;
    if (error !== undefined) row.lastError = errorSummary(error);
    return row;
  }

  #throwIfClosed(): void {
    if (this.#closed) throw new CredentialsError('ERR_FLEET_CLOSED', 'the fleet was closed', { path: 'close' });
  }
}

/** The profile's ControlPlaneHealthy condition, if it states one. */
function healthConditionOf(profile: unknown): HealthCondition | undefined {
  const conditions = (profile as { status?: { conditions?: unknown } } | null)?.status?.conditions;
  if (!Array.isArray(conditions)) return undefined;
  for (const condition of conditions) {
    if (typeof condition !== 'object' || condition === null) continue;
    const { type, status, reason, message } = condition as Record<string, unknown>;
    if (type !== 'ControlPlaneHealthy') continue;
    return {
      status: typeof status === 'string' ? status : 'Unknown',
      ...(typeof reason === 'string' ? { reason } : {}),
      ...(typeof message === 'string' ? { message } : {}),
    };
  }
  return undefined;
}

/** `{ code, message }` of any error (code `uncoded` for an uncoded one). */
export function errorSummary(error: unknown): { code: string; message: string } {
  if (isCredentialsError(error)) return { code: error.code, message: error.message };
  return { code: 'uncoded', message: error instanceof Error ? error.message : String(error) };
}

export type { KubeAccess, FleetHubOptions, AnyCredentialProvider, CredentialMode };
export { builtinPluginOf };

/** SHA-256 hex of `text` through node:crypto: a flat string (core/sha256.ts, made for a plugin's start, builds a rope). */
function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
