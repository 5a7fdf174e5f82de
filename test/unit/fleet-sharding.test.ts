/**
 * The sharded fleet's assignment and hand-over on a frozen clock: rendezvous against consistent hashing (members
 * moved when a replica joins or leaves, balance), and replicas of ShardCoordinator over one in-memory Lease API —
 * every shard held by one replica at every instant while replicas start, join, are cut off, pause, share an
 * identity, meet a Lease edited into garbage or a replica set that changes every second.
 */
import { describe, expect, it } from 'vitest';
import type { CredentialsError } from '../../src/base/errors.js';
import type { FleetClock } from '../../src/fleet/scheduler/clock.js';
import {
  assignShards,
  rendezvousHeir,
  rendezvousOwner,
  ringOwner,
  shardOf,
} from '../../src/fleet/sharding/assignment.js';
import { ShardCoordinator, type ShardLossReason } from '../../src/fleet/sharding/coordinator.js';
import { LeaseApi } from '../../src/fleet/sharding/leases.js';
import { resolveShardingOptions, type FleetShardingOptions } from '../../src/fleet/sharding/options.js';
import { FrozenClock } from '../helpers/frozen-clock.js';
import { LeaseStore } from '../helpers/lease-store.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const SHARDS = 16;
const LEASE_S = 3;
const RENEW_MS = 1_000;

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** The share of `before`'s entries that differ in `after`. */
function moved(before: readonly unknown[], after: readonly unknown[]): number {
  return before.filter((owner, i) => owner !== after[i]).length / before.length;
}

describe('assignment: rendezvous and consistent hashing', () => {
  const replicas = (n: number) => Array.from({ length: n }, (_, i) => `hub-controller-7d9f8-${i}`);

  it('hashes member keys evenly and stably into shards', () => {
    const counts = new Array<number>(64).fill(0);
    for (let i = 0; i < 30_000; i += 1) counts[shardOf(`cluster-${i}`, 64)]! += 1;
    expect(Math.max(...counts) / (30_000 / 64)).toBeLessThan(1.15);
    expect(Math.min(...counts) / (30_000 / 64)).toBeGreaterThan(0.85);
    expect(shardOf('cluster-1', 64)).toBe(shardOf('cluster-1', 64));
  });

  for (const [strategy, owner] of [
    ['rendezvous', rendezvousOwner],
    ['consistent hashing', ringOwner],
  ] as const) {
    it(`${strategy}: a fourth replica takes about a quarter, from every other replica, and nothing else moves`, () => {
      const three = assignShards(1024, replicas(3), owner);
      const four = assignShards(1024, replicas(4), owner);
      const share = moved(three, four);
      expect(share).toBeGreaterThan(0.15);
      expect(share).toBeLessThan(0.35);
      // Every shard that moved went to the new replica.
      for (let shard = 0; shard < 1024; shard += 1)
        if (three[shard] !== four[shard]) expect(four[shard]).toBe(replicas(4)[3]);
      // One replica leaving hands out only its own shards.
      const two = assignShards(1024, replicas(3).slice(1), owner);
      for (let shard = 0; shard < 1024; shard += 1)
        if (three[shard] !== replicas(3)[0]) expect(two[shard]).toBe(three[shard]);
    });
  }

  it('rendezvous balances 64 shards over 3 replicas at least as well as the ring', () => {
    const spread = (owner: typeof rendezvousOwner) => {
      let worst = 0;
      // Over many replica sets (pod names differ per Deployment), the largest share of one replica.
      for (let set = 0; set < 200; set += 1) {
        const names = Array.from({ length: 3 }, (_, i) => `ctl-${set}-${i}`);
        const counts = new Map<string, number>();
        for (const holder of assignShards(64, names, owner)) counts.set(holder!, (counts.get(holder!) ?? 0) + 1);
        worst += Math.max(...counts.values()) / (64 / 3);
      }
      return worst / 200;
    };
    const rendezvous = spread(rendezvousOwner);
    const ring = spread(ringOwner);
    expect(rendezvous).toBeLessThan(1.4);
    expect(rendezvous).toBeLessThanOrEqual(ring + 0.05);
  });

  it('does not depend on the order the replicas are listed in', () => {
    const names = replicas(5);
    expect(assignShards(64, [...names].reverse())).toEqual(assignShards(64, names));
  });
});

/** A clock whose timers can be held (a paused process) while time goes on. */
class PausableClock implements FleetClock {
  readonly #clock: FrozenClock;
  paused = false;
  readonly #held = new Map<number, () => void>();
  #next = 1;
  readonly #handles = new Map<number, unknown>();

  constructor(clock: FrozenClock) {
    this.#clock = clock;
  }

  now(): number {
    return this.#clock.now();
  }

  setTimer(callback: () => void, delayMs: number): unknown {
    const id = this.#next++;
    const fire = () => {
      this.#handles.delete(id);
      if (this.paused) this.#held.set(id, callback);
      else callback();
    };
    this.#handles.set(id, this.#clock.setTimer(fire, delayMs));
    return id;
  }

  clearTimer(handle: unknown): void {
    const id = handle as number;
    this.#held.delete(id);
    const inner = this.#handles.get(id);
    if (inner !== undefined) this.#clock.clearTimer(inner);
    this.#handles.delete(id);
  }

  /** Timers that came due while paused, to run in order on resume (as a process's overdue timers do). */
  resume(): (() => void)[] {
    this.paused = false;
    const held = [...this.#held.values()];
    this.#held.clear();
    return held;
  }
}

interface Replica {
  identity: string;
  coordinator: ShardCoordinator;
  clock: PausableClock;
  /** Shards engaged through the hooks (what the fleet's members follow). */
  engaged: Set<number>;
  log: { at: number; shard: number; what: 'acquired' | ShardLossReason }[];
  errors: CredentialsError[];
  /** The shards the standby hook last named. */
  standby: ReadonlySet<number>;
  /** What the replica says of its members' first fetches (default true). */
  settled: boolean;
}

function harness() {
  const clock = new FrozenClock(T0, settle);
  const store = new LeaseStore(() => clock.now());
  const replicas: Replica[] = [];
  const start = async (
    identity: string,
    instance = identity,
    shards = SHARDS,
    options: Partial<FleetShardingOptions> = {},
    settled = true,
  ): Promise<Replica> => {
    const own = new PausableClock(clock);
    const replica: Replica = {
      identity,
      clock: own,
      engaged: new Set(),
      log: [],
      errors: [],
      standby: new Set(),
      settled,
      coordinator: undefined as unknown as ShardCoordinator,
    };
    replica.coordinator = new ShardCoordinator({
      sharding: resolveShardingOptions(
        {
          identity,
          leaseNamespace: 'hub-system',
          shards,
          leaseDurationSeconds: LEASE_S,
          renewIntervalMs: RENEW_MS,
          safetyMarginMs: 500,
          ...options,
        },
        'fleet',
      ),
      instance,
      api: new LeaseApi(store.client(instance), {
        namespace: 'hub-system',
        fleet: 'fleet',
        timeoutMs: 1_000,
        now: () => clock.now(),
      }),
      clock: own,
      monotonic: () => clock.now(),
      settled: () => replica.settled,
      hooks: {
        acquired: (shard) => {
          replica.engaged.add(shard);
          replica.log.push({ at: clock.now(), shard, what: 'acquired' });
        },
        lost: (shard, reason) => {
          replica.engaged.delete(shard);
          replica.log.push({ at: clock.now(), shard, what: reason });
        },
        error: (error) => replica.errors.push(error),
        renewed: () => undefined,
        standby: (standby) => {
          replica.standby = standby;
        },
      },
    });
    replicas.push(replica);
    await replica.coordinator.start();
    return replica;
  };
  /** Owners of each shard right now, as the gate every member use goes through answers (a paused replica acts on none). */
  const owners = (shard: number) =>
    replicas.filter((replica) => !replica.clock.paused && replica.coordinator.owns(shard));
  let unownedSince = new Map<number, number>();
  let longestUnowned = 0;
  /** Advances in 100 ms steps, checking at each that no shard has two owners. */
  const run = async (ms: number) => {
    for (let t = 0; t < ms; t += 100) {
      await clock.advance(100);
      for (let shard = 0; shard < SHARDS; shard += 1) {
        const count = owners(shard).length;
        expect(count, `shard ${shard} at +${clock.now() - T0} ms`).toBeLessThanOrEqual(1);
        if (count === 0 && !unownedSince.has(shard)) unownedSince.set(shard, clock.now());
        if (count === 1 && unownedSince.has(shard)) {
          longestUnowned = Math.max(longestUnowned, clock.now() - unownedSince.get(shard)!);
          unownedSince.delete(shard);
        }
      }
    }
  };
  const counts = () => replicas.map((replica) => replica.coordinator.ownedShards().length);
  return {
    clock,
    store,
    replicas,
    start,
    run,
    owners,
    counts,
    longestUnowned: () => longestUnowned,
    resetUnowned: () => {
      unownedSince = new Map();
      longestUnowned = 0;
    },
  };
}

describe('ShardCoordinator on a frozen clock', () => {
  it('three replicas starting together settle with every shard held by exactly one, at (owned + 1) writes per period', async () => {
    const h = harness();
    await Promise.all(['a', 'b', 'c'].map((id) => h.start(id)));
    await h.run(10_000);
    for (let shard = 0; shard < SHARDS; shard += 1) expect(h.owners(shard)).toHaveLength(1);
    expect(h.counts().reduce((a, b) => a + b, 0)).toBe(SHARDS);
    for (const count of h.counts()) expect(count).toBeGreaterThan(0);
    // Each shard is where rendezvous puts it.
    for (let shard = 0; shard < SHARDS; shard += 1)
      expect(h.owners(shard)[0]!.identity).toBe(rendezvousOwner(shard, ['a', 'b', 'c']));
    // Steady state: one replica Lease and one per owned shard, each renew period; nothing per member.
    const before = new Map(h.store.writes);
    await h.run(10_000);
    for (const replica of h.replicas) {
      const writes = h.store.writes.get(replica.identity)! - before.get(replica.identity)!;
      expect(writes).toBe(10 * (replica.coordinator.ownedShards().length + 1));
    }
  });

  it('a joining replica takes its shards only after the old owner let them go, and only those move', async () => {
    const h = harness();
    for (const id of ['a', 'b', 'c']) await h.start(id);
    await h.run(8_000);
    const before = Array.from({ length: SHARDS }, (_, shard) => h.owners(shard)[0]!.identity);
    const d = await h.start('d');
    await h.run(5_000);
    const after = Array.from({ length: SHARDS }, (_, shard) => h.owners(shard)[0]?.identity);
    for (let shard = 0; shard < SHARDS; shard += 1) {
      if (before[shard] === after[shard]) continue;
      expect(after[shard]).toBe('d');
      const old = h.replicas.find((replica) => replica.identity === before[shard])!;
      const released = old.log.find((entry) => entry.shard === shard && entry.what === 'handedOver')!;
      const acquired = d.log.find((entry) => entry.shard === shard && entry.what === 'acquired')!;
      expect(released.at).toBeLessThanOrEqual(acquired.at);
    }
    expect(moved(before, after)).toBeCloseTo(
      moved(assignShards(SHARDS, ['a', 'b', 'c']), assignShards(SHARDS, ['a', 'b', 'c', 'd'])),
    );
  });

  it('a replica cut off from the API server fences its shards before the others take them, within lease + 2 periods', async () => {
    const h = harness();
    for (const id of ['a', 'b', 'c']) await h.start(id);
    await h.run(8_000);
    const c = h.replicas[2]!;
    const held = c.coordinator.ownedShards();
    expect(held.length).toBeGreaterThan(0);
    h.resetUnowned();
    h.store.cut.add('c');
    const cutAt = h.clock.now();
    await h.run(8_000);
    expect(c.engaged.size).toBe(0);
    for (const entry of c.log.filter((e) => e.at > cutAt)) {
      expect(entry.what).toBe('fenced');
      // Fenced by its own deadline: the last renewal's start + lease − margin, no later.
      expect(entry.at - cutAt).toBeLessThanOrEqual(LEASE_S * 1000 - 500 + 100);
    }
    for (const shard of held) expect(h.owners(shard)).toHaveLength(1);
    expect(h.longestUnowned()).toBeLessThanOrEqual(LEASE_S * 1000 + 2 * RENEW_MS);
    expect(c.errors.at(-1)?.code).toBe('ERR_FLEET_LEASE_REQUEST');
  });

  it('a replica paused past its lease disowns on resume before anything else it runs touches a member', async () => {
    const h = harness();
    for (const id of ['a', 'b', 'c']) await h.start(id);
    await h.run(8_000);
    const b = h.replicas[1]!;
    const held = b.coordinator.ownedShards();
    b.clock.paused = true;
    await h.run(LEASE_S * 1000 + 3 * RENEW_MS);
    // Others hold b's shards now; b's timers have not run.
    for (const shard of held) expect(h.owners(shard).map((r) => r.identity)).not.toContain('b');
    expect(b.engaged.size).toBe(held.length);
    // The first thing b does after the pause is ask whether it may touch a member: it may not, and is told why.
    const overdue = b.clock.resume();
    expect(b.coordinator.owns(held[0]!)).toBe(false);
    expect(b.log.at(-1)).toMatchObject({ shard: held[0], what: 'fenced' });
    for (const fire of overdue) fire();
    expect(b.engaged.size).toBe(0);
    await h.run(8_000);
    for (let shard = 0; shard < SHARDS; shard += 1) expect(h.owners(shard)).toHaveLength(1);
  });

  it('the API server gone for longer than the lease: everyone fences, then the shards are shared out again', async () => {
    const h = harness();
    for (const id of ['a', 'b', 'c']) await h.start(id);
    await h.run(8_000);
    for (const id of ['a', 'b', 'c']) h.store.cut.add(id);
    await h.run(LEASE_S * 1000 * 3);
    expect(h.counts()).toEqual([0, 0, 0]);
    h.store.cut.clear();
    await h.run(10_000);
    for (let shard = 0; shard < SHARDS; shard += 1)
      expect(h.owners(shard)[0]!.identity).toBe(rendezvousOwner(shard, ['a', 'b', 'c']));
  });

  it('two replicas with one identity: reported, and still one holder per shard', async () => {
    const h = harness();
    await h.start('a', 'a-1');
    await h.start('a', 'a-2');
    await h.start('b');
    await h.run(15_000);
    const errors = h.replicas.flatMap((replica) => replica.errors.map((error) => error.code));
    expect(errors).toContain('ERR_FLEET_REPLICA_IDENTITY');
  });

  it('a shard Lease edited into garbage is reported, then taken over after a lease duration', async () => {
    const h = harness();
    for (const id of ['a', 'b']) await h.start(id);
    await h.run(6_000);
    const name = 'cpfleet-fleet-shard-3';
    h.store.overwrite(name, {
      metadata: { labels: { 'clusterprofile-credentials.io/fleet': 'fleet' } },
      spec: { holderIdentity: 42, leaseDurationSeconds: 'soon' },
    });
    await h.run(RENEW_MS * 2);
    const reported = h.replicas
      .flatMap((replica) => replica.errors)
      .filter((error) => error.code === 'ERR_FLEET_LEASE_INVALID');
    expect(reported.length).toBeGreaterThan(0);
    expect(reported[0]!.path).toBe(`leases/hub-system/${name}`);
    await h.run(LEASE_S * 1000 + 2 * RENEW_MS);
    expect(h.owners(3)).toHaveLength(1);
  });

  it('a Lease namespace the replica may not write: ERR_FLEET_LEASE_FORBIDDEN and no shard', async () => {
    const h = harness();
    h.store.refused.add('a');
    const a = await h.start('a');
    await h.run(3_000);
    expect(a.coordinator.ownedShards()).toEqual([]);
    expect(a.errors[0]?.code).toBe('ERR_FLEET_LEASE_FORBIDDEN');
    expect(a.errors[0]?.message).toContain('hub-system');
  });

  it('replicas that disagree on the shard count: ERR_FLEET_SHARD_CONFIG, the odd one left out', async () => {
    const h = harness();
    await h.start('a');
    const b = await h.start('b', 'b', SHARDS * 2);
    await h.run(5_000);
    expect(b.errors.map((error) => error.code)).toContain('ERR_FLEET_SHARD_CONFIG');
    expect(h.replicas[0]!.coordinator.replicas().find((r) => r.identity === 'b')?.live ?? false).toBe(false);
  });

  it('a replica set changing every second: never two owners, no shard unowned longer than lease + 2 periods', async () => {
    const h = harness();
    for (const id of ['a', 'b', 'c']) await h.start(id);
    await h.run(6_000);
    h.resetUnowned();
    const flapping = await h.start('d');
    for (let second = 0; second < 20; second += 1) {
      if (second % 2 === 0) h.store.cut.add('d');
      else h.store.cut.delete('d');
      await h.run(1_000);
    }
    h.store.cut.delete('d');
    expect(h.longestUnowned()).toBeLessThanOrEqual(LEASE_S * 1000 + 2 * RENEW_MS);
    expect(flapping.errors.length).toBeGreaterThan(0);
    await h.run(8_000);
    for (let shard = 0; shard < SHARDS; shard += 1) expect(h.owners(shard)).toHaveLength(1);
  });

  it('a replica that closes writes its shards free at once; the others take them within a period', async () => {
    const h = harness();
    for (const id of ['a', 'b']) await h.start(id);
    await h.run(6_000);
    const closedAt = h.clock.now();
    await h.replicas[1]!.coordinator.close();
    h.replicas.splice(1, 1);
    await h.run(RENEW_MS * 3);
    expect(h.replicas[0]!.coordinator.ownedShards()).toHaveLength(SHARDS);
    const last = Math.max(...h.replicas[0]!.log.filter((e) => e.at >= closedAt).map((e) => e.at));
    expect(last - closedAt).toBeLessThanOrEqual(LEASE_S * 1000);
  });

  it('a replica that stops is replaced as soon as its lease expires, not at the next period of the others', async () => {
    const h = harness();
    // The others renew every 700 ms: the stopped replica's expiry falls between two of their periods.
    for (const id of ['a', 'b']) await h.start(id, id, SHARDS, { renewIntervalMs: 700 });
    const c = await h.start('c');
    await h.run(8_000);
    const held = c.coordinator.ownedShards();
    expect(held.length).toBeGreaterThan(0);
    c.clock.paused = true;
    const lastWrite = h.store.lastWriteAt.get('c')!;
    h.store.cut.add('c');
    const stoppedAt = h.clock.now();
    await h.run(LEASE_S * 1000 + 3_000);
    for (const shard of held) {
      const heir = h.replicas.find((replica) =>
        replica.log.some((entry) => entry.shard === shard && entry.what === 'acquired' && entry.at > stoppedAt),
      )!;
      const takenAt = heir.log.find((entry) => entry.shard === shard && entry.at > stoppedAt)!.at;
      // The heir saw c's last write at its first list after it; the lease ran out a lease duration later, on its
      // clock; it took the shard within the harness's 100 ms step of that, not at its next period (up to 700 ms on).
      const seenAt = h.store.listedAt.get(heir.identity)!.find((at) => at >= lastWrite)!;
      expect(takenAt - (seenAt + LEASE_S * 1000)).toBeGreaterThanOrEqual(0);
      expect(takenAt - (seenAt + LEASE_S * 1000)).toBeLessThanOrEqual(200);
      expect(h.owners(shard)).toEqual([heir]);
    }
  });

  it('standby: each replica is told the shards it would inherit, and inherits exactly those when an owner stops', async () => {
    const h = harness();
    for (const id of ['a', 'b', 'c']) await h.start(id, id, SHARDS, { standby: true });
    await h.run(5_000);
    const [a, b, c] = h.replicas as [Replica, Replica, Replica];
    for (let shard = 0; shard < SHARDS; shard += 1) {
      const heirs = h.replicas.filter((replica) => replica.standby.has(shard));
      expect(heirs.map((replica) => replica.identity)).toEqual([rendezvousHeir(shard, ['a', 'b', 'c'])]);
      expect(heirs[0]!.coordinator.owns(shard)).toBe(false);
    }
    const heirOf = new Map(c.coordinator.ownedShards().map((shard) => [shard, a.standby.has(shard) ? a : b]));
    c.clock.paused = true;
    h.store.cut.add('c');
    await h.run(LEASE_S * 1000 + 3_000);
    for (const [shard, heir] of heirOf) expect(h.owners(shard)).toEqual([heir]);
    // Two replicas left: each now stands by for every shard of the other.
    for (let shard = 0; shard < SHARDS; shard += 1)
      expect([a, b].filter((replica) => replica.standby.has(shard))).toEqual(
        [a, b].filter((replica) => !replica.coordinator.owns(shard)),
      );
  });

  it('standby waits until every live replica says its own members are settled', async () => {
    const h = harness();
    for (const id of ['a', 'b']) await h.start(id, id, SHARDS, { standby: true });
    const c = await h.start('c', 'c', SHARDS, { standby: true }, false);
    await h.run(5_000);
    for (const replica of h.replicas) expect(replica.standby.size).toBe(0);
    c.settled = true;
    await h.run(3 * RENEW_MS);
    for (const replica of h.replicas) expect(replica.standby.size).toBeGreaterThan(0);
  });

  it('without standby the hook is never called', async () => {
    const h = harness();
    for (const id of ['a', 'b']) await h.start(id);
    await h.run(5_000);
    for (const replica of h.replicas) expect(replica.standby.size).toBe(0);
    expect(() => resolveShardingOptions({ identity: 'a', leaseNamespace: 'x', standby: 'yes' }, 'fleet')).toThrow(
      /sharding\.standby must be true or false/,
    );
  });
});
