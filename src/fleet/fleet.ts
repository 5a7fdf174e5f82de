/**
 * {@link ClusterProfileFleet}: one inventory (a namespace of ClusterProfiles on the hub, KEP-4322) kept as one live
 * client per member cluster. The object wires the parts and answers for them: the hub connection
 * (./hub-connection.ts), the list/watch loop (./inventory-watch.ts) that drives member reconciliation
 * (./members.ts), the credential slots (./credentials/) refreshed by the scheduler (./scheduler/), the event bus
 * (./events.ts), status (./status.ts) and metrics (./metrics.ts). Its options, events and member view are in
 * ./fleet-types.ts. With the `sharding` option a shard coordinator (./sharding/) decides which members this replica
 * engages.
 */
import { randomBytes } from 'node:crypto';
import { monotonicMs } from '../base/io.js';
import { CredentialsError } from '../base/errors.js';
import type { ExecCredential } from '../exec/output.js';
import { FleetCredentials } from './credentials/slots.js';
import { FleetEventBus } from './events.js';
import type {
  ClusterProfileFleetOptions,
  FleetEvent,
  FleetEventOf,
  FleetEventType,
  FleetMember,
  FleetStatus,
} from './fleet-types.js';
import { HubConnection } from './hub-connection.js';
import { InventoryWatch } from './inventory-watch.js';
import { memberCredential } from './member-credential.js';
import { FleetMembers } from './members.js';
import { FleetMetrics } from './metrics.js';
import { systemClock, type FleetClock } from './scheduler/clock.js';
import { DEFAULT_REFRESH_POLICY } from './scheduler/refresh-time.js';
import { ShardCoordinator } from './sharding/coordinator.js';
import { LeaseApi } from './sharding/leases.js';
import { resolveShardingOptions, type ResolvedShardingOptions } from './sharding/options.js';
import { countByState, errorSummary, memberStatus, secondsToNearestExpiry, shardingStatus } from './status.js';

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
  readonly #events: FleetEventBus;
  readonly #metrics: FleetMetrics;
  readonly #credentials: FleetCredentials;
  readonly #members: FleetMembers;
  readonly #stop = new AbortController();
  readonly #sharding: ResolvedShardingOptions | undefined;
  #coordinator: ShardCoordinator | undefined;
  /** Sharded with standby: the shards the coordinator last said this replica would inherit. */
  #standbyShards: ReadonlySet<number> = new Set();
  #hub: HubConnection | undefined;
  #watch: InventoryWatch | undefined;
  #started = false;
  #closed = false;

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
    this.#sharding =
      options.sharding === undefined ? undefined : resolveShardingOptions(options.sharding, options.namespace);
    this.namespace = options.namespace;
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#events = new FleetEventBus(options.warn);
    this.#metrics = new FleetMetrics({
      clustersByState: () => countByState(this.#members.values()),
      secondsToNearestExpiry: () => secondsToNearestExpiry(this.#credentials.slots(), () => this.#clock.now()),
      sharding: () => {
        const coordinator = this.#coordinator;
        if (coordinator === undefined) return undefined;
        return {
          members: this.#members.size,
          shards: coordinator.ownedShards().length,
          replicas: coordinator.replicas().filter((replica) => replica.live).length,
          standby: this.#members.standbyCounts().ready,
        };
      },
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
      onResult: (slot, error) => this.#members.onCredential(slot, error),
      onFetch: (record) => this.#metrics.fetch(record),
    });
    this.#members = new FleetMembers(options, {
      namespace: this.namespace,
      credentials: this.#credentials,
      events: this.#events,
      metrics: this.#metrics,
      clock: this.#clock,
      ownership:
        this.#sharding === undefined
          ? undefined
          : {
              shards: this.#sharding.shards,
              owns: (shard) => this.#coordinator?.owns(shard) === true,
            },
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
      this.#members.buildClientsWith((await import('../client-node/build-config.js')).ClusterProfileKubeConfig);
    }
    await this.#credentials.prepare(this.#options.accessConfig);
    this.#throwIfClosed();
    if (this.#sharding !== undefined) await this.#startSharding(hub, this.#sharding);
    const watch = new InventoryWatch({
      namespace: this.namespace,
      hub,
      members: this.#members,
      events: this.#events,
      metrics: this.#metrics,
      clock: this.#clock,
      random: this.#random,
      signal: this.#stop.signal,
    });
    this.#watch = watch;
    try {
      await watch.listFirst();
    } catch (error) {
      // A start that fails holds no shard: the other replicas take them at once.
      await this.#coordinator?.close();
      throw error;
    }
    this.#throwIfClosed();
    this.#members.markSynced();
    watch.start();
  }

  /** The shard coordinator's first round: this replica holds its shards before the first list is applied. */
  async #startSharding(hub: HubConnection, sharding: ResolvedShardingOptions): Promise<void> {
    const events = this.#events;
    const metrics = this.#metrics;
    const coordinator = new ShardCoordinator({
      sharding,
      instance: randomBytes(8).toString('hex'),
      api: new LeaseApi(hub.send, {
        namespace: sharding.leaseNamespace,
        fleet: this.namespace,
        timeoutMs: sharding.leaseDurationSeconds * 1000,
        now: () => this.#clock.now(),
      }),
      settled: () => this.#members.isSettled,
      clock: this.#clock,
      monotonic: this.#options.monotonic ?? (this.#options.clock === undefined ? monotonicMs : () => this.#clock.now()),
      hooks: {
        acquired: (shard, from) => {
          metrics.handOver('acquired');
          // The event first: a listener learns of the shard before its members' `added`.
          const members = this.#members.adopt(shard);
          events.emit({ type: 'handOver', shard, action: 'acquired', members, from });
        },
        lost: (shard, reason) => {
          const members = this.#members.disown(shard, reason);
          if (reason === 'closed') return;
          const action = reason === 'handedOver' ? 'released' : 'lost';
          metrics.handOver(action);
          events.emit({ type: 'handOver', shard, action, members });
        },
        error: (error, failures) => {
          metrics.leaseFailure(error.code);
          events.emit({ type: 'leaseError', error, failures });
        },
        renewed: (seconds) => metrics.leaseWrite(seconds),
        standby: (shards) => {
          this.#standbyShards = shards;
          this.#members.standby(shards);
        },
      },
    });
    this.#coordinator = coordinator;
    await coordinator.start();
  }

  /** Resolves when every member has had its first credential fetch end (a credential or an error), or is invalid. */
  settled(): Promise<void> {
    return this.#members.settled();
  }

  /** The member `name`, if the inventory has it. */
  get(name: string): FleetMember | undefined {
    return this.#members.get(name);
  }

  /**
   * The member's current credential (a bearer token, or a client certificate and key), for a caller that sends its
   * own requests: the one the member's client uses, fetched if none is held or it expired, refreshed by the fleet
   * ahead of expiry. Works with `clients: false`. Rejects with `ERR_FLEET_MEMBER_UNKNOWN` for a name the inventory
   * does not have, with the profile's coded resolution error for an invalid member, and with the last fetch's coded
   * error while that member's backoff lasts.
   *
   * @example
   * ```ts
   * const credential = await fleet.credential('member-1');
   * const headers = credential.token === undefined ? {} : { authorization: `Bearer ${credential.token}` };
   * ```
   */
  credential(name: string): Promise<ExecCredential> {
    return memberCredential(this.#members.get(name), name, this.namespace);
  }

  /** Every member (sharded: every member this replica owns now), in name order. */
  list(): FleetMember[] {
    return [...this.#members.values()]
      .filter((member) => this.#members.get(member.name) !== undefined)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The fleet as plain data: the hub, counts by state, credential load, one row per member. */
  status(): FleetStatus {
    const hubError = this.#watch?.hubError;
    return {
      namespace: this.namespace,
      hub: {
        server: this.#hub?.server,
        version: this.#hub?.version,
        resourceVersion: this.#watch?.resourceVersion,
        synced: this.#members.synced,
        relists: this.#watch?.relists ?? 0,
        ...(hubError === undefined ? {} : { lastError: errorSummary(hubError) }),
      },
      counts: countByState(this.#members.values()),
      credentials: { slots: this.#credentials.size, ...this.#credentials.load },
      clusters: this.list().map((member) => {
        const internal = this.#members.get(member.name);
        const slot = internal?.slot;
        const row = memberStatus(member, slot === undefined ? undefined : this.#credentials.dueAt(slot));
        if (this.#coordinator !== undefined && internal !== undefined) {
          row.shard = internal.shard;
          row.owner = this.#coordinator.identity;
        }
        return row;
      }),
      ...(this.#coordinator === undefined || this.#sharding === undefined
        ? {}
        : {
            sharding: shardingStatus(this.#coordinator, this.#sharding, {
              shards: [...this.#standbyShards],
              ...this.#members.standbyCounts(),
            }),
          }),
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
    return this.#events.on(type, listener);
  }

  /**
   * The events from now on as an async iterator; with `replay` (default true) it starts with an `added` for each
   * member already engaged. Ends when the fleet closes, `signal` aborts or the loop breaks.
   */
  events(options: { replay?: boolean; signal?: AbortSignal } = {}): AsyncIterableIterator<FleetEvent> {
    const replay: FleetEvent[] = [];
    if (options.replay !== false) {
      for (const member of this.list()) if (member.engaged) replay.push({ type: 'added', name: member.name, member });
    }
    return this.#events.subscribe({ replay, ended: this.#closed, signal: options.signal });
  }

  [Symbol.asyncIterator](): AsyncIterator<FleetEvent> {
    return this.events();
  }

  /** Stops the watch and the refreshes, closes every client and forgets every credential; ends the iterators. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stop.abort(new CredentialsError('ERR_FLEET_CLOSED', 'the fleet was closed'));
    await this.#watch?.loop;
    const clientsClosed = this.#members.close();
    this.#credentials.close();
    await clientsClosed;
    // After every member was disengaged: the shard Leases are written free for the other replicas.
    await this.#coordinator?.close();
    await this.#hub?.close();
    this.#events.end();
    this.#members.resolveSettled();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #throwIfClosed(): void {
    if (this.#closed) throw new CredentialsError('ERR_FLEET_CLOSED', 'the fleet was closed', { path: 'close' });
  }
}
