/**
 * The fleet's metrics in the Prometheus text format, through prom-client (../base/prometheus.ts). Each fleet has its
 * own registry: nothing lands in prom-client's global one unless the caller merges it
 * (`Registry.merge([fleet.metricsRegistry, register])`).
 */
import type { Counter, Histogram, Registry } from 'prom-client';
import { OwnedMetrics } from '../base/prometheus.js';
import type { FetchRecord } from './credentials/slots.js';

/** The metric names, for dashboards and tests. */
export const FLEET_METRICS = {
  clusters: 'clusterprofile_fleet_clusters',
  fetches: 'clusterprofile_fleet_credential_fetches_total',
  failures: 'clusterprofile_fleet_credential_fetch_failures_total',
  timeouts: 'clusterprofile_fleet_credential_fetch_timeouts_total',
  duration: 'clusterprofile_fleet_credential_fetch_duration_seconds',
  nearestExpiry: 'clusterprofile_fleet_credential_nearest_expiry_seconds',
  rebuilds: 'clusterprofile_fleet_client_rebuilds_total',
  relists: 'clusterprofile_fleet_hub_relists_total',
  watchErrors: 'clusterprofile_fleet_hub_watch_errors_total',
  ownedMembers: 'clusterprofile_fleet_owned_members',
  ownedShards: 'clusterprofile_fleet_owned_shards',
  liveReplicas: 'clusterprofile_fleet_live_replicas',
  standbyMembers: 'clusterprofile_fleet_standby_members',
  handOvers: 'clusterprofile_fleet_hand_overs_total',
  leaseWrite: 'clusterprofile_fleet_lease_renew_duration_seconds',
  leaseFailures: 'clusterprofile_fleet_lease_renew_failures_total',
} as const;

/** What the gauges read when scraped. */
export interface FleetGaugeSource {
  /** Members by state (every state present, zero included). */
  clustersByState(): Record<string, number>;
  /** Seconds until the earliest credential expiry among the fleet's credentials; undefined when none expires. */
  secondsToNearestExpiry(): number | undefined;
  /** Sharded: members engaged here, shards held, live replicas; undefined when not sharded (the gauges are absent). */
  sharding(): { members: number; shards: number; replicas: number; standby: number } | undefined;
}

/** The fleet's counters, histogram and gauges in one registry. */
export class FleetMetrics {
  readonly #metrics = new OwnedMetrics('fleet');
  readonly #fetches: Counter<'provider' | 'mode'>;
  readonly #failures: Counter<'provider' | 'mode' | 'code'>;
  readonly #timeouts: Counter<'provider' | 'mode'>;
  readonly #duration: Histogram<'provider' | 'mode'>;
  readonly #rebuilds: Counter;
  readonly #relists: Counter;
  readonly #watchErrors: Counter<'code'>;
  readonly #handOvers: Counter<'action'>;
  readonly #leaseWrite: Histogram;
  readonly #leaseFailures: Counter<'code'>;

  constructor(source: FleetGaugeSource) {
    const metrics = this.#metrics;
    metrics.gauge({
      name: FLEET_METRICS.clusters,
      help: 'Member clusters by state (pending, ready, unhealthy, failing, invalid).',
      labelNames: ['state'],
      collect() {
        for (const [state, count] of Object.entries(source.clustersByState())) this.set({ state }, count);
      },
    });
    metrics.gauge({
      name: FLEET_METRICS.nearestExpiry,
      help: "Seconds until the earliest expiry among the fleet's credentials (absent when none expires).",
      collect() {
        const seconds = source.secondsToNearestExpiry();
        this.reset();
        if (seconds !== undefined) this.set(seconds);
      },
    });
    for (const [name, help, key] of [
      [FLEET_METRICS.ownedMembers, 'Sharded: members this replica engages (those of the shards it holds).', 'members'],
      [FLEET_METRICS.ownedShards, 'Sharded: virtual shards whose Lease this replica holds.', 'shards'],
      [FLEET_METRICS.liveReplicas, 'Sharded: replicas renewing their Lease, as this replica sees them.', 'replicas'],
      [
        FLEET_METRICS.standbyMembers,
        'Sharded with standby: members of shards this replica would inherit whose credential it holds now.',
        'standby',
      ],
    ] as const) {
      metrics.gauge({
        name,
        help,
        collect() {
          const sharding = source.sharding();
          this.reset();
          if (sharding !== undefined) this.set(sharding[key]);
        },
      });
    }
    this.#handOvers = metrics.counter({
      name: FLEET_METRICS.handOvers,
      help: 'Sharded: shards acquired, released to another replica, or lost to the fencing deadline.',
      labelNames: ['action'],
    });
    this.#leaseWrite = metrics.histogram({
      name: FLEET_METRICS.leaseWrite,
      help: 'Sharded: time of one Lease renewal or acquisition (a compare-and-swap on the hub).',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    });
    this.#leaseFailures = metrics.counter({
      name: FLEET_METRICS.leaseFailures,
      help: 'Sharded: failed Lease rounds and writes, and bad Leases seen, by error code.',
      labelNames: ['code'],
    });
    this.#fetches = metrics.counter({
      name: FLEET_METRICS.fetches,
      help: 'Credential fetches by provider and mode (in-process or exec).',
      labelNames: ['provider', 'mode'],
    });
    this.#failures = metrics.counter({
      name: FLEET_METRICS.failures,
      help: 'Failed credential fetches by provider, mode and error code.',
      labelNames: ['provider', 'mode', 'code'],
    });
    this.#timeouts = metrics.counter({
      name: FLEET_METRICS.timeouts,
      help: 'Credential fetches stopped at their deadline (plugin process killed, in-process provider aborted).',
      labelNames: ['provider', 'mode'],
    });
    this.#duration = metrics.histogram({
      name: FLEET_METRICS.duration,
      help: 'Time of one credential fetch, queueing for a fetch or process place included.',
      labelNames: ['provider', 'mode'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
    this.#rebuilds = metrics.counter({
      name: FLEET_METRICS.rebuilds,
      help: 'Member clients rebuilt because their resolved access changed.',
    });
    this.#relists = metrics.counter({
      name: FLEET_METRICS.relists,
      help: 'Full lists of the inventory after the first (watch resourceVersion gone).',
    });
    this.#watchErrors = metrics.counter({
      name: FLEET_METRICS.watchErrors,
      help: 'Failed hub lists and watches by error code.',
      labelNames: ['code'],
    });
  }

  fetch(record: FetchRecord): void {
    const labels = { provider: record.providerName, mode: record.mode };
    this.#fetches.inc(labels);
    this.#duration.observe(labels, record.seconds);
    if (record.failure !== undefined) this.#failures.inc({ ...labels, code: record.failure });
    if (record.timedOut) this.#timeouts.inc(labels);
  }

  rebuild(): void {
    this.#rebuilds.inc();
  }

  handOver(action: 'acquired' | 'released' | 'lost'): void {
    this.#handOvers.inc({ action });
  }

  leaseWrite(seconds: number): void {
    this.#leaseWrite.observe(seconds);
  }

  leaseFailure(code: string): void {
    this.#leaseFailures.inc({ code });
  }

  relist(): void {
    this.#relists.inc();
  }

  watchError(code: string): void {
    this.#watchErrors.inc({ code });
  }

  /** The fleet's own registry. */
  get registry(): Registry {
    return this.#metrics.registry;
  }

  /** The text exposition (`text/plain; version=0.0.4`). */
  text(): Promise<string> {
    return this.#metrics.text();
  }

  get contentType(): string {
    return this.#metrics.contentType;
  }
}
