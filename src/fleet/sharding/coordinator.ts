/**
 * One replica's side of a sharded fleet: every renew period it reads the fleet's Leases (one list), renews its replica
 * Lease (its heartbeat), works out the live replica set, and for each virtual shard decides by rendezvous hashing
 * (./assignment.ts) whether it should own it. It hands over what it should no longer own (the members are told first,
 * `removed` with reason `handedOver`, then the shard Lease is written free), renews what it keeps, and acquires what it
 * should own only when that shard's Lease is free or expired. Every write is a compare-and-swap, so two replicas never
 * hold one shard Lease at once.
 *
 * Expiry of another replica's Lease is judged on this replica's monotonic clock, from when it saw the Lease's
 * resourceVersion change (as client-go's leader election does), never by comparing renewTime across machines.
 * Fencing: each owned shard has a local deadline, the start of its last successful renewal + the lease duration − the
 * safety margin; past it the shard is lost (`removed`, reason `fenced`) by a timer and, whatever ran first after a
 * pause, by {@link ShardCoordinator.owns}, which every use of a member goes through.
 */
import { formatError, isCredentialsError, CredentialsError } from '../../base/errors.js';
import type { FleetClock } from '../scheduler/clock.js';
import { rendezvousHeir, rendezvousOwner } from './assignment.js';
import type { LeaseApi, LeaseRecord, LeaseSpecInput, LeaseWrite } from './leases.js';
import type { ResolvedShardingOptions } from './options.js';

/** Why a replica stops owning a shard. */
export type ShardLossReason = 'handedOver' | 'fenced' | 'closed';

/** What the coordinator tells the fleet. */
export interface ShardCoordinatorHooks {
  /** The shard is ours: engage its members. */
  acquired(shard: number, previousHolder: string | undefined): void;
  /** The shard is no longer ours: disengage its members now (before its Lease is written free). */
  lost(shard: number, reason: ShardLossReason): void;
  /** A Lease failure or a bad Lease, coded; `failures` counts consecutive failed rounds. */
  error(error: CredentialsError, failures: number): void;
  /** One Lease write's time in seconds (renewals and acquisitions, failed or not). */
  renewed(seconds: number): void;
  /**
   * With `standby`: the shards this replica would inherit if their owner stopped (rendezvous's second choice among
   * the live replicas), after a round in which every live replica (this one too) said its own members are settled, so
   * that standby fetches never compete with a replica's first fetches; empty with one replica or while this replica is
   * not live. Not called otherwise (what is held stays held).
   */
  standby?(shards: ReadonlySet<number>): void;
}

interface Owned {
  resourceVersion: string;
  /** Monotonic ms after which the shard's members are not to be touched. */
  deadline: number;
  transitions: number;
}

interface Observation {
  resourceVersion: string;
  /** Monotonic ms when this resourceVersion was first seen here. */
  seenAt: number;
}

/** A replica as the coordinator last saw it. */
export interface ReplicaView {
  identity: string;
  live: boolean;
  /** Shards it owns (by the shard Leases' holders). */
  shards: number;
}

export interface ShardCoordinatorOptions {
  sharding: ResolvedShardingOptions;
  /** This process's random id (two replicas of one identity are told apart by it). */
  instance: string;
  api: LeaseApi;
  /** Timers (the fleet's clock). */
  clock: FleetClock;
  /** Monotonic milliseconds (deadlines and expiry). */
  monotonic: () => number;
  hooks: ShardCoordinatorHooks;
  /** Whether every member this replica owns has had its first credential fetch (announced in its heartbeat). */
  settled?: () => boolean;
}

/** How long after a Lease it waits on expires (on this replica's clock) a replica runs its early round. */
const EXPIRY_SLACK_MS = 50;

/** One replica's ownership of virtual shards. */
export class ShardCoordinator {
  readonly #o: ShardCoordinatorOptions;
  readonly #s: ResolvedShardingOptions;
  readonly #owned = new Map<number, Owned>();
  readonly #observed = new Map<string, Observation>();
  /** Bad Leases already reported, by name and resourceVersion. */
  readonly #reported = new Set<string>();
  #holders: (string | undefined)[] = [];
  #replicas: ReplicaView[] = [];
  #replicaVersion: string | undefined;
  /** Monotonic ms until which this replica counts itself live (its last heartbeat's start + lease − margin). */
  #aliveUntil = Number.NEGATIVE_INFINITY;
  #replicaTransitions = 0;
  #failures = 0;
  #rounds = 0;
  /** Monotonic ms at which the earliest Lease this replica waits on (a live replica's, a shard it is to acquire) expires. */
  #nextExpiry = Number.POSITIVE_INFINITY;
  #tickTimer: unknown;
  #fenceTimer: unknown;
  #round: Promise<void> | undefined;
  #closed = false;

  constructor(options: ShardCoordinatorOptions) {
    this.#o = options;
    this.#s = options.sharding;
  }

  get identity(): string {
    return this.#s.identity;
  }

  get shards(): number {
    return this.#s.shards;
  }

  /** Lease name of a replica. */
  replicaLease(identity: string): string {
    return `${this.#s.leaseNamePrefix}-replica-${identity}`;
  }

  /** Lease name of a shard. */
  shardLease(shard: number): string {
    return `${this.#s.leaseNamePrefix}-shard-${shard}`;
  }

  /** Rounds run (each a list and the writes it called for). */
  get rounds(): number {
    return this.#rounds;
  }

  /** Whether this replica may act on the members of `shard` now; a shard past its deadline is lost here first. */
  owns(shard: number): boolean {
    const owned = this.#owned.get(shard);
    if (owned === undefined) return false;
    if (this.#o.monotonic() < owned.deadline) return true;
    this.#lose(shard, 'fenced');
    return false;
  }

  /** The shards owned now, in order. */
  ownedShards(): number[] {
    return [...this.#owned.keys()].filter((shard) => this.owns(shard)).sort((a, b) => a - b);
  }

  /** Every shard's holder as last read (undefined: free); ours as we hold them now. */
  holders(): (string | undefined)[] {
    return Array.from({ length: this.#s.shards }, (_, shard) =>
      this.owns(shard)
        ? this.#s.identity
        : this.#holders[shard] === this.#s.identity
          ? undefined
          : this.#holders[shard],
    );
  }

  /** The replicas as last read. */
  replicas(): ReplicaView[] {
    return this.#replicas;
  }

  /**
   * Runs the first round, then one per period. The first round only announces this replica (its heartbeat) and reads
   * the others: replicas started together see each other before any of them acquires, so none engages members it
   * would hand over a period later. Shards are acquired from the second round on.
   */
  async start(): Promise<void> {
    await this.#runRound();
  }

  /** Stops the rounds, writes every owned shard Lease free (the members were disengaged before) and the replica's. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#o.clock.clearTimer(this.#tickTimer);
    this.#o.clock.clearTimer(this.#fenceTimer);
    await this.#round;
    const releases = [...this.#owned.entries()].map(([shard, owned]) => {
      this.#lose(shard, 'closed');
      return this.#release(shard, owned);
    });
    if (this.#replicaVersion !== undefined) {
      releases.push(
        this.#o.api
          .replace(
            this.replicaLease(this.#s.identity),
            'replica',
            this.#replicaVersion,
            this.#input(undefined, false, this.#replicaTransitions),
          )
          .then(
            () => undefined,
            () => undefined,
          ),
      );
    }
    await Promise.all(releases);
  }

  async #runRound(): Promise<void> {
    const started = this.#o.monotonic();
    this.#nextExpiry = Number.POSITIVE_INFINITY; // set again by a round that reads the Leases
    this.#round = this.#roundOnce().catch((error: unknown) => this.#fail(error));
    await this.#round;
    this.#round = undefined;
    if (this.#closed) return;
    this.#armFence();
    // The next round at the period, or just after a Lease it waits on expires if that is sooner: a replica that died is
    // replaced as soon as its lease allows, not up to a period later. Its heartbeat would have renewed the Lease by
    // then, so an early round happens only when a replica (or a shard's holder) has gone silent.
    const now = this.#o.monotonic();
    const expiry = this.#nextExpiry + EXPIRY_SLACK_MS;
    const periodic = started + this.#s.renewIntervalMs;
    const next = Math.max(0, (expiry > now ? Math.min(periodic, expiry) : periodic) - now);
    this.#tickTimer = this.#o.clock.setTimer(() => void this.#runRound(), next);
  }

  #fail(error: unknown): void {
    this.#failures += 1;
    const coded = isCredentialsError(error)
      ? error
      : new CredentialsError('ERR_FLEET_LEASE_REQUEST', `a lease round failed: ${formatError(error)}`, {
          cause: error,
        });
    this.#o.hooks.error(coded as CredentialsError, this.#failures);
  }

  #input(holder: string | undefined, acquired: boolean, transitions: number, shards?: number): LeaseSpecInput {
    return {
      holder,
      instance: this.#o.instance,
      durationSeconds: this.#s.leaseDurationSeconds,
      acquired,
      transitions,
      ...(shards === undefined ? {} : { shards }),
    };
  }

  /** True when `record` has been unchanged (as this replica saw it) for its lease duration. */
  #expired(record: LeaseRecord, now: number): boolean {
    return now >= this.#expiresAt(record);
  }

  /** When `record` expires on this replica's monotonic clock: its version first seen here + its lease duration. */
  #expiresAt(record: LeaseRecord): number {
    const seen = this.#observed.get(record.name);
    const seconds = record.durationSeconds ?? this.#s.leaseDurationSeconds;
    return seen === undefined ? Number.POSITIVE_INFINITY : seen.seenAt + seconds * 1000;
  }

  #report(
    record: LeaseRecord,
    code: 'ERR_FLEET_LEASE_INVALID' | 'ERR_FLEET_REPLICA_IDENTITY' | 'ERR_FLEET_SHARD_CONFIG',
    message: string,
  ): void {
    const key = `${code}/${record.name}/${record.resourceVersion}`;
    if (this.#reported.has(key)) return;
    if (this.#reported.size > 1024) this.#reported.clear();
    this.#reported.add(key);
    this.#o.hooks.error(
      new CredentialsError(code, message, { path: `leases/${this.#o.api.namespace}/${record.name}` }),
      this.#failures,
    );
  }

  async #roundOnce(): Promise<void> {
    const { api, monotonic } = this.#o;
    const s = this.#s;
    const leases = await api.list();
    const listed = monotonic();
    this.#rounds += 1;
    const names = new Set<string>();
    for (const record of leases) {
      names.add(record.name);
      const seen = this.#observed.get(record.name);
      if (seen === undefined || seen.resourceVersion !== record.resourceVersion)
        this.#observed.set(record.name, { resourceVersion: record.resourceVersion, seenAt: listed });
    }
    for (const name of this.#observed.keys()) if (!names.has(name)) this.#observed.delete(name);

    // The heartbeat.
    const ownName = this.replicaLease(s.identity);
    const own = leases.find((record) => record.name === ownName);
    if (
      own !== undefined &&
      own.resourceVersion !== this.#replicaVersion &&
      own.instance !== this.#o.instance &&
      own.holder === s.identity &&
      this.#replicaVersion !== undefined
    ) {
      this.#report(
        own,
        'ERR_FLEET_REPLICA_IDENTITY',
        `another process renews the replica Lease ${ownName} of identity ${s.identity}: two replicas were given one identity`,
      );
    }
    // While this replica is live (its last heartbeat within the lease), the heartbeat goes out with the round's other
    // writes; otherwise it must succeed first, so that a replica never acquires as a member of a set it is not in.
    const heartbeatStarted = monotonic();
    const settled = this.#o.settled?.() === true;
    const heartbeat = this.#timed(() =>
      own === undefined
        ? api.create(ownName, 'replica', { ...this.#input(s.identity, true, 0, s.shards), settled })
        : api.replace(ownName, 'replica', own.resourceVersion, {
            ...this.#input(s.identity, own.holder !== s.identity, own.transitions, s.shards),
            settled,
          }),
    ).then((write) => {
      if (!write.ok) {
        this.#aliveUntil = Number.NEGATIVE_INFINITY;
        throw new CredentialsError(
          'ERR_FLEET_LEASE_REQUEST',
          `the replica Lease ${ownName} changed under this replica's renewal`,
          { path: `leases/${api.namespace}/${ownName}` },
        );
      }
      this.#replicaVersion = write.resourceVersion;
      this.#replicaTransitions = own?.transitions ?? 0;
      this.#aliveUntil = heartbeatStarted + s.leaseDurationSeconds * 1000 - s.safetyMarginMs;
      this.#observed.set(ownName, { resourceVersion: write.resourceVersion, seenAt: monotonic() });
    });
    if (!(this.#aliveUntil > listed)) await heartbeat.catch(() => undefined);
    const alive = this.#aliveUntil > monotonic();

    // The live replica set: ours, and every replica Lease that changed within its duration and agrees on the shards.
    const live = new Set<string>(alive ? [s.identity] : []);
    const seenReplicas = new Set<string>();
    let othersSettled = true;
    for (const record of leases) {
      if (record.role !== 'replica' || record.name === ownName) continue;
      if (record.problem !== undefined) {
        this.#report(
          record,
          'ERR_FLEET_LEASE_INVALID',
          `Lease ${record.name} does not read as a replica Lease: ${record.problem}`,
        );
        continue;
      }
      if (record.holder === undefined || record.holder === s.identity) continue;
      seenReplicas.add(record.holder);
      if (record.shards !== s.shards) {
        this.#report(
          record,
          'ERR_FLEET_SHARD_CONFIG',
          `replica ${record.holder} runs with ${record.shards} shards, this one (${s.identity}) with ${s.shards}`,
        );
        continue;
      }
      if (!this.#expired(record, listed)) {
        live.add(record.holder);
        othersSettled &&= record.settled;
      }
    }
    const replicas = [...live].sort();
    let nextExpiry = Number.POSITIVE_INFINITY;
    const waitOn = (record: LeaseRecord): void => {
      const at = this.#expiresAt(record);
      if (at > listed) nextExpiry = Math.min(nextExpiry, at);
    };
    for (const record of leases)
      if (
        record.role === 'replica' &&
        record.name !== ownName &&
        record.holder !== undefined &&
        live.has(record.holder)
      )
        waitOn(record);

    // The shard Leases.
    const byShard = new Map<number, LeaseRecord & { transitions: number }>();
    const prefix = `${s.leaseNamePrefix}-shard-`;
    for (const record of leases) {
      if (!record.name.startsWith(prefix)) continue;
      const shard = Number(record.name.slice(prefix.length));
      if (
        !Number.isInteger(shard) ||
        shard < 0 ||
        shard >= s.shards ||
        String(shard) !== record.name.slice(prefix.length)
      )
        continue;
      byShard.set(shard, record);
    }
    const holders: (string | undefined)[] = [];
    const writes: Promise<void>[] = [];
    for (let shard = 0; shard < s.shards; shard++) {
      const record = byShard.get(shard);
      holders[shard] = record?.problem === undefined ? record?.holder : `?${record.name}`;
      const mine = alive && this.#rounds > 1 && rendezvousOwner(shard, replicas) === s.identity;
      const owned = this.#owned.get(shard);
      if (owned !== undefined && !this.owns(shard)) continue; // lost to its deadline just now
      if (owned !== undefined && !mine && alive) {
        // Hand-over: the members first, then the Lease written free.
        this.#lose(shard, 'handedOver');
        writes.push(this.#release(shard, owned));
      } else if (owned !== undefined) {
        writes.push(this.#renew(shard, owned));
      } else if (mine) {
        if (record !== undefined && record.holder !== undefined && record.holder !== s.identity) waitOn(record);
        writes.push(this.#acquire(shard, record, listed));
      }
    }
    this.#nextExpiry = nextExpiry;
    // Every write ends before the round does (a write still under way would race the next round's).
    const failed = (await Promise.allSettled([heartbeat, ...writes])).find((outcome) => outcome.status === 'rejected');
    // Standby once this round's acquisitions are done (an acquired shard's members took their standby slots over):
    // the shards this replica is heir of, and those it should own but does not hold yet (a silent owner's Lease
    // still running), whose members it will engage as soon as it does.
    if (this.#s.standby && (!alive || (this.#rounds > 1 && settled && othersSettled))) {
      const standby = new Set<number>();
      if (alive)
        for (let shard = 0; shard < s.shards; shard++) {
          if (this.#owned.has(shard)) continue;
          if (rendezvousOwner(shard, replicas) === s.identity || rendezvousHeir(shard, replicas) === s.identity)
            standby.add(shard);
        }
      this.#o.hooks.standby?.(standby);
    }
    this.#holders = holders;
    const counts = new Map<string, number>();
    for (const holder of this.holders()) if (holder !== undefined) counts.set(holder, (counts.get(holder) ?? 0) + 1);
    this.#replicas = [...new Set([...seenReplicas, ...live])]
      .sort()
      .map((identity) => ({ identity, live: live.has(identity), shards: counts.get(identity) ?? 0 }));
    if (failed !== undefined) throw failed.reason;
    this.#failures = 0;
  }

  /** Times one Lease write for the renew metrics. */
  async #timed<T>(write: () => Promise<T>): Promise<T> {
    const at = this.#o.monotonic();
    try {
      return await write();
    } finally {
      this.#o.hooks.renewed((this.#o.monotonic() - at) / 1000);
    }
  }

  async #renew(shard: number, owned: Owned): Promise<void> {
    const started = this.#o.monotonic();
    let result: LeaseWrite;
    try {
      result = await this.#timed(() =>
        this.#o.api.replace(
          this.shardLease(shard),
          'shard',
          owned.resourceVersion,
          this.#input(this.#s.identity, false, owned.transitions),
        ),
      );
    } catch (error) {
      // A failed renewal changes nothing: the fencing deadline stands.
      if (this.#owned.get(shard) === owned) throw error;
      return;
    }
    if (this.#owned.get(shard) !== owned) return; // lost while the write was under way
    if (!result.ok) {
      // Someone else wrote our Lease: it is not ours any more.
      this.#lose(shard, 'fenced');
      return;
    }
    owned.resourceVersion = result.resourceVersion;
    owned.deadline = started + this.#s.leaseDurationSeconds * 1000 - this.#s.safetyMarginMs;
  }

  async #acquire(
    shard: number,
    record: (LeaseRecord & { transitions: number }) | undefined,
    now: number,
  ): Promise<void> {
    const name = this.shardLease(shard);
    let current = record;
    if (current === undefined) {
      // A Lease that lost the fleet's label is not listed: look it up by name before creating it.
      current = await this.#o.api.get(name);
      if (current !== undefined) {
        this.#observed.set(
          name,
          this.#observed.get(name)?.resourceVersion === current.resourceVersion
            ? this.#observed.get(name)!
            : { resourceVersion: current.resourceVersion, seenAt: now },
        );
      }
    }
    if (current?.problem !== undefined)
      this.#report(
        current,
        'ERR_FLEET_LEASE_INVALID',
        `Lease ${name} does not read as a shard Lease: ${current.problem}`,
      );
    const ourOwn = current?.holder === this.#s.identity && current.instance === this.#o.instance;
    const free = current !== undefined && current.problem === undefined && current.holder === undefined;
    if (current !== undefined && !free && !ourOwn && !this.#expired(current, now)) return;
    const started = this.#o.monotonic();
    const transitions = current?.transitions ?? 0;
    const result = await this.#timed(() =>
      current === undefined
        ? this.#o.api.create(name, 'shard', this.#input(this.#s.identity, true, 0))
        : this.#o.api.replace(name, 'shard', current.resourceVersion, this.#input(this.#s.identity, true, transitions)),
    );
    if (!result.ok || this.#closed) return;
    const owned: Owned = {
      resourceVersion: result.resourceVersion,
      deadline: started + this.#s.leaseDurationSeconds * 1000 - this.#s.safetyMarginMs,
      transitions: transitions + 1,
    };
    this.#owned.set(shard, owned);
    this.#o.hooks.acquired(shard, ourOwn ? undefined : current?.holder);
  }

  /** Writes the shard's Lease free (its members were disengaged); a failure leaves it to expire. */
  async #release(shard: number, owned: Owned): Promise<void> {
    await this.#o.api
      .replace(this.shardLease(shard), 'shard', owned.resourceVersion, this.#input(undefined, false, owned.transitions))
      .catch(() => undefined);
  }

  #lose(shard: number, reason: ShardLossReason): void {
    if (!this.#owned.delete(shard)) return;
    this.#o.hooks.lost(shard, reason);
  }

  /** A timer at the earliest deadline of an owned shard. */
  #armFence(): void {
    this.#o.clock.clearTimer(this.#fenceTimer);
    let earliest = Number.POSITIVE_INFINITY;
    for (const owned of this.#owned.values()) earliest = Math.min(earliest, owned.deadline);
    if (earliest === Number.POSITIVE_INFINITY || this.#closed) return;
    this.#fenceTimer = this.#o.clock.setTimer(() => {
      for (const shard of [...this.#owned.keys()]) this.owns(shard);
      this.#armFence();
    }, earliest - this.#o.monotonic());
  }
}
