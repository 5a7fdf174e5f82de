/**
 * The fleet's timing on a frozen clock: refresh times ahead of expiry with jitter, backoff per slot, one timer for
 * any number of due times, FIFO bounds — and FleetCredentials driving a real in-process provider through
 * obtainCredential (its on-disk cache in a temp directory): first fetch, refresh ahead of the shared cache's margin,
 * backoff that requests cannot skip, the fetch bound and the deadline, one slow member never delaying the others.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CredentialsError } from '../../src/base/errors.js';
import type { CredentialProvider } from '../../src/plugin/provider.js';
import { builtinPluginOf } from '../../src/fleet/credentials/builtin-plugins.js';
import { FleetCredentials, type CredentialSlot, type FetchRecord } from '../../src/fleet/credentials/slots.js';
import { DueQueue } from '../../src/fleet/scheduler/due-queue.js';
import { backoffDelay, DEFAULT_REFRESH_POLICY, refreshTime } from '../../src/fleet/scheduler/refresh-time.js';
import { Semaphore } from '../../src/fleet/scheduler/semaphore.js';
import { FleetEventBus } from '../../src/fleet/events.js';
import { FleetMembers } from '../../src/fleet/members.js';
import { FleetMetrics } from '../../src/fleet/metrics.js';
import { shardOf } from '../../src/fleet/sharding/assignment.js';
import type { AccessConfig, ResolvedClusterAccess } from '../../src/resolve/types.js';
import { FrozenClock as FrozenClockBase } from '../helpers/frozen-clock.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The frozen clock of these tests: between timers it lets promise chains and the cache's file writes settle. */
class FrozenClock extends FrozenClockBase {
  constructor() {
    super(T0, settle);
  }
}

/** The cache directory of the FleetCredentials tests: a write in progress there is a `.tmp` file. */
let writesIn: string | undefined;

/**
 * Lets promise chains and file I/O callbacks run (file reads on the thread pool take real time, more on a loaded
 * machine), and waits until no temporary file is left in the cache directory.
 */
async function settle(): Promise<void> {
  for (let round = 0; ; round += 1) {
    for (let i = 0; i < 30; i += 1) await new Promise((resolve) => setImmediate(resolve));
    let writing = false;
    try {
      writing =
        writesIn !== undefined &&
        readdirSync(writesIn, { recursive: true }).some((name) => String(name).endsWith('.tmp'));
    } catch {
      // removed after its test
    }
    if (!writing || round > 1000) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('refreshTime', () => {
  const policy = { ...DEFAULT_REFRESH_POLICY, marginMs: MINUTE };

  it('is the margin before expiry, earlier by a random share of the lifetime (at most 10 %, at most 5 min)', () => {
    expect(refreshTime(T0, T0 + HOUR, policy, () => 0)).toBe(T0 + HOUR - MINUTE);
    expect(refreshTime(T0, T0 + HOUR, policy, () => 0.5)).toBe(T0 + HOUR - MINUTE - 150_000);
    // 10 % of 10 min is 1 min: the spread shrinks with the lifetime.
    expect(refreshTime(T0, T0 + 10 * MINUTE, policy, () => 0.999999)).toBe(T0 + 10 * MINUTE - MINUTE - 60_000);
  });

  it('spreads credentials obtained together over the window instead of one instant', () => {
    let seed = 1;
    const random = (): number => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const times = Array.from({ length: 1000 }, () => refreshTime(T0, T0 + HOUR, policy, random)!);
    const earliest = Math.min(...times);
    const latest = Math.max(...times);
    expect(latest).toBeLessThanOrEqual(T0 + HOUR - MINUTE);
    expect(earliest).toBeGreaterThanOrEqual(T0 + HOUR - MINUTE - 5 * MINUTE);
    expect(latest - earliest).toBeGreaterThan(4 * MINUTE);
    // No second holds more than a few of them.
    const perSecond = new Map<number, number>();
    for (const time of times) perSecond.set(Math.floor(time / 1000), (perSecond.get(Math.floor(time / 1000)) ?? 0) + 1);
    expect(Math.max(...perSecond.values())).toBeLessThan(15);
  });

  it('never comes sooner than minDelayMs after the credential was obtained; no expiry, no refresh', () => {
    expect(refreshTime(T0, T0 + 30_000, policy, () => 0)).toBe(T0 + 1_000);
    expect(refreshTime(T0, T0 - 5_000, policy, () => 0)).toBe(T0 + 1_000);
    expect(refreshTime(T0, undefined, policy, () => 0)).toBeUndefined();
  });
});

describe('backoffDelay', () => {
  it('doubles per consecutive failure from 1 s up to 5 min, scaled by 0.5 + r/2', () => {
    const top = (failures: number): number => backoffDelay(failures, DEFAULT_REFRESH_POLICY, () => 0.999999999);
    expect([1, 2, 3, 4, 9, 10, 20, 1000].map(top)).toEqual([
      1_000, 2_000, 4_000, 8_000, 256_000, 300_000, 300_000, 300_000,
    ]);
    expect(backoffDelay(3, DEFAULT_REFRESH_POLICY, () => 0)).toBe(2_000);
  });
});

describe('DueQueue', () => {
  it('calls onDue for each key at its time, earliest first, on one timer; schedule moves a key, cancel drops it', async () => {
    const clock = new FrozenClock();
    const fired: [string, number][] = [];
    const queue = new DueQueue(clock, (key) => fired.push([key, clock.now() - T0]));
    queue.schedule('c', T0 + 300);
    queue.schedule('a', T0 + 100);
    queue.schedule('b', T0 + 200);
    queue.schedule('d', T0 + 50);
    queue.schedule('d', T0 + 400);
    queue.schedule('e', T0 + 250);
    queue.cancel('e');
    expect(clock.timers.size).toBe(1);
    expect(queue.dueAt('d')).toBe(T0 + 400);
    await clock.advance(1_000);
    expect(fired).toEqual([
      ['a', 100],
      ['b', 200],
      ['c', 300],
      ['d', 400],
    ]);
    expect(queue.size).toBe(0);
    expect(clock.timers.size).toBe(0);
  });

  it('holds 10 000 keys on one timer and fires each once', async () => {
    const clock = new FrozenClock();
    const fired = new Map<string, number>();
    const queue = new DueQueue(clock, (key) => fired.set(key, (fired.get(key) ?? 0) + 1));
    for (let i = 0; i < 10_000; i += 1) queue.schedule(`k${i}`, T0 + ((i * 7919) % 10_000));
    expect(clock.timers.size).toBe(1);
    await clock.advance(5_000);
    expect(fired.size).toBe(5_001);
    await clock.advance(5_000);
    expect(fired.size).toBe(10_000);
    expect([...fired.values()].every((count) => count === 1)).toBe(true);
  });

  it('does nothing after close', async () => {
    const clock = new FrozenClock();
    const fired: string[] = [];
    const queue = new DueQueue(clock, (key) => fired.push(key));
    queue.schedule('a', T0 + 10);
    queue.close();
    queue.schedule('b', T0 + 10);
    await clock.advance(100);
    expect(fired).toEqual([]);
    expect(clock.timers.size).toBe(0);
  });
});

describe('Semaphore', () => {
  it('admits at most `limit` holders and serves waiters in arrival order', async () => {
    const semaphore = new Semaphore(2);
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const job = (name: string) =>
      semaphore.run(async () => {
        order.push(`start ${name}`);
        await new Promise<void>((resolve) => gates.set(name, resolve));
        order.push(`end ${name}`);
      });
    const all = ['a', 'b', 'c', 'd'].map(job);
    await settle();
    expect(order).toEqual(['start a', 'start b']);
    expect(semaphore.waiting).toBe(2);
    gates.get('b')!();
    await settle();
    expect(order).toEqual(['start a', 'start b', 'end b', 'start c']);
    gates.get('a')!();
    gates.get('c')!();
    await settle();
    gates.get('d')!();
    await Promise.all(all);
    expect(order.filter((line) => line.startsWith('start'))).toEqual(['start a', 'start b', 'start c', 'start d']);
    expect(semaphore.held).toBe(0);
  });
});

describe('builtinPluginOf', () => {
  it("recognises this package's plugins by binary name, or as node running their script", () => {
    expect(
      builtinPluginOf({ command: '/usr/bin/clusterprofile-token-request', args: ['--bootstrap', 'in-cluster'] }),
    ).toEqual({ binary: 'clusterprofile-token-request', argv: ['--bootstrap', 'in-cluster'] });
    expect(
      builtinPluginOf({ command: 'node', args: ['/opt/cpc/bin/clusterprofile-oidc.mjs', '--grant', 'x'] }),
    ).toEqual({ binary: 'clusterprofile-oidc', argv: ['--grant', 'x'] });
    expect(builtinPluginOf({ command: process.execPath, args: ['clusterprofile-tenant-cert.js'] })).toEqual({
      binary: 'clusterprofile-tenant-cert',
      argv: [],
    });
    expect(builtinPluginOf({ command: 'kubelogin', args: ['get-token'] })).toBeUndefined();
    expect(builtinPluginOf({ command: 'node', args: ['--inspect', 'clusterprofile-oidc.mjs'] })).toBeUndefined();
  });
});

// ------------------------------------------------------------------------------------------ FleetCredentials

const flags = { fail: { type: 'boolean', description: 'fail' } } as const;

/** A provider of 1-hour tokens (cache margin 60 s) whose behaviour a test steers per cluster server. */
function testProvider(behaviour: {
  failFor?: Set<string>;
  hangFor?: Set<string>;
  issued: string[];
  lifetimeMs?: number;
}): CredentialProvider<typeof flags, { server: string }> {
  return {
    name: 'fleet-test',
    description: 'test tokens',
    flags,
    minRemainingSeconds: 60,
    settings: ({ input }) => ({ server: input.spec.cluster?.server ?? '' }),
    cacheKey: (settings) => settings,
    async issue(settings, context) {
      behaviour.issued.push(settings.server);
      if (behaviour.hangFor?.has(settings.server)) {
        await new Promise((_, reject) =>
          context.signal.addEventListener('abort', () => reject(context.signal.reason as Error)),
        );
      }
      if (behaviour.failFor?.has(settings.server))
        throw new CredentialsError('ERR_EXEC_FAILED', `no token for ${settings.server}`);
      const expires = new Date(context.now().getTime() + (behaviour.lifetimeMs ?? HOUR));
      return {
        status: {
          token: `token-${behaviour.issued.length}`,
          expirationTimestamp: expires.toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      };
    },
  };
}

/** The exec stanza of the providers file's `test` entry: the provider registered in-process under that name. */
const TEST_EXEC = {
  apiVersion: 'client.authentication.k8s.io/v1',
  command: 'test-plugin',
  args: [],
  env: [],
  provideClusterInfo: true,
  interactiveMode: 'Never',
} as const;

function access(server: string): ResolvedClusterAccess {
  return {
    providerName: 'test',
    profile: { namespace: 'fleet', name: server },
    cluster: { server },
    exec: { ...TEST_EXEC, args: [], env: [] },
  };
}

describe('FleetCredentials on a frozen clock', () => {
  let cacheDir: string;
  let clock: FrozenClock;
  let results: { slot: CredentialSlot; error: unknown }[];
  let fetches: FetchRecord[];

  beforeEach(async () => {
    cacheDir = await mkdtemp(path.join(tmpdir(), 'fleet-unit-'));
    writesIn = cacheDir;
    clock = new FrozenClock();
    results = [];
    fetches = [];
  });
  afterEach(async () => {
    await rm(cacheDir, { recursive: true, force: true });
  });

  function credentials(
    provider: CredentialProvider<typeof flags, { server: string }>,
    o: { maxConcurrentFetches?: number; random?: () => number; fetchTimeoutMs?: number } = {},
  ): FleetCredentials {
    return new FleetCredentials({
      env: { KUBECACHEDIR: cacheDir, HOME: cacheDir },
      clock,
      random: o.random ?? (() => 0.5),
      policy: DEFAULT_REFRESH_POLICY,
      maxConcurrentFetches: o.maxConcurrentFetches ?? 16,
      maxConcurrentProcesses: 2,
      fetchTimeoutMs: o.fetchTimeoutMs ?? 10_000,
      providers: { test: provider },
      inProcess: true,
      onResult: (slot, error) => results.push({ slot, error }),
      onFetch: (record) => fetches.push(record),
    });
  }

  it('fetches a new slot at once, then refreshes it ahead of expiry (forcing past the shared cache), never before', async () => {
    const behaviour = { issued: [] as string[] };
    const fleet = credentials(testProvider(behaviour));
    const slot = fleet.acquire(access('https://a'));
    expect(slot.mode).toBe('in-process');
    await clock.advance(0);
    expect(behaviour.issued).toEqual(['https://a']);
    expect(slot.credential?.token).toBe('token-1');
    expect(slot.credential?.expiresAt).toBe(T0 + HOUR);
    // Due at expiry − 60 s (the provider's margin) − 0.5 × min(10 % of 1 h, 5 min) = T0 + 56.5 min.
    const due = T0 + HOUR - MINUTE - 150_000;
    expect(fleet.dueAt(slot)).toBe(due);
    await clock.advance(due - T0 - 1);
    expect(behaviour.issued).toHaveLength(1);
    await clock.advance(1);
    // The shared cache would still serve token-1 (4 min left > 60 s): the scheduler forced a new one.
    expect(behaviour.issued).toHaveLength(2);
    expect(slot.credential?.token).toBe('token-2');
    expect(slot.credential?.expiresAt).toBe(due + HOUR);
    expect(fetches.map((f) => [f.providerName, f.mode, f.failure])).toEqual([
      ['test', 'in-process', undefined],
      ['test', 'in-process', undefined],
    ]);
    fleet.close();
  });

  it('a second fleet (another process) on the same cache directory is served the stored credential: no second issuance', async () => {
    const behaviour = { issued: [] as string[] };
    const provider = testProvider(behaviour);
    const first = credentials(provider);
    const slot = first.acquire(access('https://a'));
    await clock.advance(0);
    // A second fleet (another process) on the same cache directory, later: it is served token-1 from disk.
    await clock.advance(10 * MINUTE);
    const other = credentials(provider);
    const otherSlot = other.acquire(access('https://a'));
    await clock.advance(0);
    expect(otherSlot.credential?.token).toBe('token-1');
    expect(behaviour.issued).toHaveLength(1);
    first.close();
    other.close();
    expect(slot.closed).toBe(true);
  });

  it('backs off per slot on failure, and a request between failures does not run the provider', async () => {
    const behaviour = { issued: [] as string[], failFor: new Set(['https://bad']) };
    const fleet = credentials(testProvider(behaviour), { random: () => 0.999999999 });
    const bad = fleet.acquire(access('https://bad'));
    const good = fleet.acquire(access('https://good'));
    await clock.advance(0);
    expect(good.credential?.token).toBeDefined();
    expect(bad.failures).toBe(1);
    expect((bad.lastError as CredentialsError).code).toBe('ERR_EXEC_FAILED');
    expect(bad.retryAt).toBe(T0 + 1_000);
    // A request now gets the last error without a new attempt.
    await expect(bad.authenticator.getCredential()).rejects.toMatchObject({ code: 'ERR_EXEC_FAILED' });
    expect(behaviour.issued.filter((s) => s === 'https://bad')).toHaveLength(1);
    // Attempts at +1 s, +2 s, +4 s, +8 s after each failure.
    const attempts: number[] = [];
    for (let step = 0; step < 20; step += 1) {
      const before = behaviour.issued.length;
      await clock.advance(500);
      if (behaviour.issued.length > before) attempts.push(clock.now() - T0);
    }
    expect(attempts).toEqual([1_000, 3_000, 7_000]);
    expect(bad.failures).toBe(4);
    expect(fleet.dueAt(bad)).toBe(T0 + 15_000);
    // It recovers at the next attempt once the provider works.
    behaviour.failFor.clear();
    await clock.advance(8_000);
    expect(bad.failures).toBe(0);
    expect(bad.credential).toBeDefined();
    expect(results.filter((r) => r.slot === bad && r.error !== undefined)).toHaveLength(4);
    fleet.close();
  });

  it('a refresh ahead of expiry that fails leaves requests on the credential the slot still holds, until it expires', async () => {
    const behaviour = { issued: [] as string[], failFor: new Set<string>() };
    const fleet = credentials(testProvider(behaviour), { random: () => 0 });
    const slot = fleet.acquire(access('https://a'));
    await clock.advance(0);
    const first = slot.credential!;
    behaviour.failFor.add('https://a');
    // Due at expiry − 60 s; the refresh fails and backs off.
    await clock.advance(HOUR - MINUTE);
    expect(slot.failures).toBe(1);
    expect(results.at(-1)?.error).toBeDefined();
    // Requests still get the old credential (valid for 60 s more), between attempts too.
    expect(await slot.authenticator.getCredential()).toBe(first);
    await clock.advance(30_000);
    expect(await slot.authenticator.getCredential()).toBe(first);
    // Past its expiry there is nothing valid to hand out: the last error.
    await clock.advance(31_000);
    await expect(slot.authenticator.getCredential()).rejects.toMatchObject({ code: 'ERR_EXEC_FAILED' });
    fleet.close();
  });

  it('bounds concurrent fetches; a hanging provider is aborted at its deadline and counted, and delays no other slot', async () => {
    const behaviour = { issued: [] as string[], hangFor: new Set(['https://hang-1', 'https://hang-2']) };
    const fleet = credentials(testProvider(behaviour), { maxConcurrentFetches: 3, fetchTimeoutMs: 5_000 });
    const hanging = [fleet.acquire(access('https://hang-1')), fleet.acquire(access('https://hang-2'))];
    const others = Array.from({ length: 20 }, (_, i) => fleet.acquire(access(`https://ok-${i}`)));
    await clock.advance(0);
    // Two places are held by the hanging providers; the third serves the twenty others one after another.
    expect(fleet.load.fetching).toBe(2);
    expect(others.every((slot) => slot.credential !== undefined)).toBe(true);
    expect(clock.now()).toBe(T0);
    await clock.advance(5_000);
    for (const slot of hanging) {
      expect((slot.lastError as CredentialsError).code).toBe('ERR_FLEET_CREDENTIAL_TIMEOUT');
      expect(slot.credential).toBeUndefined();
    }
    expect(fetches.filter((f) => f.timedOut)).toHaveLength(2);
    expect(fetches.filter((f) => f.timedOut).map((f) => f.failure)).toEqual([
      'ERR_FLEET_CREDENTIAL_TIMEOUT',
      'ERR_FLEET_CREDENTIAL_TIMEOUT',
    ]);
    expect(fleet.load.fetching).toBe(0);
    fleet.close();
  });

  it('a cold start starts its due fetches as places free up (the rest wait as keys), and a request serves a waiting one once', async () => {
    const servers = ['https://a', 'https://b', 'https://c', 'https://d'];
    const behaviour = { issued: [] as string[], hangFor: new Set(servers) };
    const fleet = credentials(testProvider(behaviour), { maxConcurrentFetches: 1, fetchTimeoutMs: 5_000 });
    const slots = servers.map((server) => fleet.acquire(access(server)));
    await clock.advance(0);
    // One fetch holds the place, one more waits at the semaphore, the other two wait as due keys (not yet started).
    expect(fleet.load).toMatchObject({ fetching: 1, waiting: 3 });
    expect(behaviour.issued).toHaveLength(1);
    const notStarted = slots.filter((slot) => slot.fetches === 0);
    expect(notStarted).toHaveLength(2);
    behaviour.hangFor.clear();
    // A request for one of them starts its fetch and takes it off the scheduler's list: it is issued once, not twice.
    const requested = notStarted[0]!.authenticator.getCredential();
    await clock.advance(0);
    expect(fleet.load).toMatchObject({ fetching: 1, waiting: 3 });
    await clock.advance(5_000);
    await requested;
    expect(slots.filter((slot) => slot.credential !== undefined)).toHaveLength(3);
    for (const slot of slots) expect(slot.fetches).toBe(1);
    for (const server of servers) expect(behaviour.issued.filter((issued) => issued === server)).toHaveLength(1);
    expect(fleet.load).toMatchObject({ fetching: 0, waiting: 0 });
    fleet.close();
  });

  it('shares one slot between members with the same plugin input and forgets it with the last one', async () => {
    const behaviour = { issued: [] as string[] };
    const fleet = credentials(testProvider(behaviour));
    const one = fleet.acquire(access('https://same'));
    const two = fleet.acquire(access('https://same'));
    expect(two).toBe(one);
    await clock.advance(0);
    expect(behaviour.issued).toHaveLength(1);
    fleet.release(one);
    expect(one.closed).toBe(false);
    expect(fleet.dueAt(one)).toBeDefined();
    fleet.release(two);
    expect(one.closed).toBe(true);
    expect(one.credential).toBeUndefined();
    expect(fleet.dueAt(one)).toBeUndefined();
    expect(fleet.size).toBe(0);
    await expect(one.authenticator.getCredential()).rejects.toMatchObject({ code: 'ERR_FLEET_CLOSED' });
    fleet.close();
  });

  it('close() kills a plugin process still running (a CLI that exits after close() orphans none)', async () => {
    const pidFile = path.join(cacheDir, 'plugin.pid');
    const fleet = new FleetCredentials({
      env: { ...process.env, KUBECACHEDIR: cacheDir, PID_FILE: pidFile },
      clock,
      random: () => 0.5,
      policy: DEFAULT_REFRESH_POLICY,
      maxConcurrentFetches: 4,
      maxConcurrentProcesses: 2,
      fetchTimeoutMs: 60_000,
      providers: {},
      inProcess: true,
      onResult: (slot, error) => results.push({ slot, error }),
      onFetch: (record) => fetches.push(record),
    });
    const hangs: ResolvedClusterAccess = {
      ...access('https://hangs'),
      providerName: 'hangs',
      exec: {
        ...access('https://hangs').exec,
        command: process.execPath,
        args: [
          '-e',
          "require('node:fs').writeFileSync(process.env.PID_FILE, String(process.pid)); setInterval(() => {}, 1000)",
        ],
      },
    };
    const slot = fleet.acquire(hangs);
    expect(slot.mode).toBe('exec');
    await clock.advance(0);
    const started = Date.now();
    while (!existsSync(pidFile) && Date.now() - started < 10_000)
      await new Promise((resolve) => setTimeout(resolve, 20));
    const pid = Number(readFileSync(pidFile, 'utf8'));
    const alive = (): boolean => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(true);
    fleet.close();
    while (alive() && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(alive()).toBe(false);
  });
});

describe('standby slots: FleetMembers over FleetCredentials on a frozen clock', () => {
  const SHARDS = 4;
  let cacheDir: string;
  let clock: FrozenClock;

  beforeEach(async () => {
    cacheDir = await mkdtemp(path.join(tmpdir(), 'fleet-standby-'));
    writesIn = cacheDir;
    clock = new FrozenClock();
  });
  afterEach(async () => {
    await rm(cacheDir, { recursive: true, force: true });
  });

  const accessConfig: AccessConfig = { providers: [{ name: 'test', execConfig: { ...TEST_EXEC, args: [], env: [] } }] };
  const profile = (name: string) => ({
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { namespace: 'fleet', name },
    spec: { displayName: name, clusterManager: { name: 'test' } },
    status: { accessProviders: [{ name: 'test', cluster: { server: `https://${name}.example` } }] },
  });

  function setup() {
    const behaviour = { issued: [] as string[] };
    const fetches: FetchRecord[] = [];
    const owned = new Set<number>();
    const events = new FleetEventBus(undefined);
    const added: string[] = [];
    events.on('added', (event) => added.push(event.name));
    let members: FleetMembers | undefined;
    const credentials = new FleetCredentials({
      env: { KUBECACHEDIR: cacheDir, HOME: cacheDir },
      clock,
      random: () => 0.5,
      policy: DEFAULT_REFRESH_POLICY,
      maxConcurrentFetches: 16,
      maxConcurrentProcesses: 2,
      fetchTimeoutMs: 10_000,
      providers: { test: testProvider(behaviour) },
      inProcess: true,
      onResult: (slot, error) => members?.onCredential(slot, error),
      onFetch: (record) => fetches.push(record),
    });
    members = new FleetMembers(
      { accessConfig },
      {
        namespace: 'fleet',
        ownership: { shards: SHARDS, owns: (shard) => owned.has(shard) },
        credentials,
        events,
        metrics: new FleetMetrics({
          clustersByState: () => ({}),
          secondsToNearestExpiry: () => undefined,
          sharding: () => undefined,
        }),
        clock,
      },
    );
    // Members of every shard, kept (none owned yet).
    const names = Array.from({ length: 24 }, (_, i) => `m-${i}`);
    for (const name of names) members.apply(name, profile(name));
    const inShard = (shard: number) => names.filter((name) => shardOf(name, SHARDS) === shard);
    return { behaviour, fetches, owned, added, members, credentials, inShard };
  }

  it('holds the slots of a standby shard without engaging; adopting it engages every member at once, with no fetch', async () => {
    const { behaviour, fetches, owned, added, members, credentials, inShard } = setup();
    const shard = [0, 1, 2, 3].find((s) => inShard(s).length > 0)!;
    members.standby(new Set([shard]));
    await clock.advance(0);
    expect(behaviour.issued).toHaveLength(inShard(shard).length);
    expect(members.standbyCounts()).toEqual({ members: inShard(shard).length, ready: inShard(shard).length });
    expect(added).toEqual([]);
    for (const name of inShard(shard)) expect(members.get(name)).toBeUndefined();

    // The owner dies: the shard is this replica's. Its members are engaged in the same call, from the held slots.
    owned.add(shard);
    members.adopt(shard);
    expect(added.sort()).toEqual(inShard(shard).sort());
    for (const name of inShard(shard)) expect(members.get(name)?.state).toBe('ready');
    const before = fetches.length;
    members.standby(new Set());
    await clock.advance(0);
    expect(fetches.length).toBe(before);
    expect(members.standbyCounts()).toEqual({ members: 0, ready: 0 });
    // The slots stay with the members (held once each, not let go with the standby).
    expect(credentials.size).toBe(inShard(shard).length);
    credentials.close();
  });

  it('lets go of the slots of a shard that leaves the standby set, and holds those of a new one', async () => {
    const { behaviour, members, credentials, inShard } = setup();
    const [first, second] = [0, 1, 2, 3].filter((s) => inShard(s).length > 0) as [number, number];
    members.standby(new Set([first]));
    await clock.advance(0);
    members.standby(new Set([second]));
    await clock.advance(0);
    expect(members.standbyCounts().members).toBe(inShard(second).length);
    expect(credentials.size).toBe(inShard(second).length);
    expect(behaviour.issued).toHaveLength(inShard(first).length + inShard(second).length);
    credentials.close();
  });
});
