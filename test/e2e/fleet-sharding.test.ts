/**
 * The sharded fleet on the real control plane: replica processes (test/e2e/fixtures/fleet-replica.mjs, the built
 * package) over one inventory of ClusterProfiles, coordinating through Leases in their own namespace with the rights of
 * deploy/examples/sharded-controller/rbac.yaml. Each replica logs its fleet's events as JSON lines with timestamps;
 * the assertions are read from those logs:
 *
 * - steady state: every member engaged by exactly one replica, the one holding its shard's Lease, and reached;
 * - SIGKILL of one replica: its members engaged by the others within the lease duration and a few seconds;
 * - SIGSTOP past the lease, then SIGCONT: the paused replica reports `removed` for what it lost before touching any;
 * - a fourth replica: about a quarter of the members move, all of them to it, nothing else;
 * - kube-apiserver stopped for longer than the lease: every replica fences, then the members are shared out again;
 * - with `standby` (members with a credential each): a SIGKILLed replica's members are engaged by the others with
 *   the credentials they already held for them, within the lease duration and a few seconds;
 * - throughout: no member acted on by two replicas at once (each replica's span of use of a member, from `added` to
 *   its last use, never overlaps another replica's), and no request of a member answered after its `removed`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readlinkSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { benchProfileStatus, createBenchProfiles } from '../../bench/lib/fleet-profiles.mjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rendezvousOwner, shardOf } from '../../src/fleet/sharding/assignment.js';
import { loadKubeAccess } from '../../src/kube/kubeconfig-loader.js';
import { createKubeTransport } from '../../src/kube/transport.js';
import { applyAsAdmin, clientCertKubeconfig, e2eContext, exec, kubectl } from '../helpers/controlplane-e2e.js';
import { fleetRbac } from '../helpers/fleet-rbac.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const REPLICA = path.join(repo, 'test/e2e/fixtures/fleet-replica.mjs');
const CLI = path.join(repo, 'bin/clusterprofile.mjs');
const NS = 'shard-e2e';
const LEASES = 'shard-e2e-leases';
const SA_NS = 'shard-e2e-members';
const HUB_USER = 'e2e-shard-hub';
const MINTER = 'e2e-shard-minter';
const N = 240;
const SHARDS = 32;
const LEASE_S = 5;
const SHARDING = {
  leaseNamespace: LEASES,
  shards: SHARDS,
  leaseDurationSeconds: LEASE_S,
  renewIntervalMs: 1000,
  safetyMarginMs: 1000,
};
const TOUCH_MS = 250;
/** The standby scenario's inventory: members with an audience each, so each has a credential of its own. */
const STANDBY_NS = 'shard-e2e-standby';
const STANDBY_N = 90;

interface LogRecord {
  t: number;
  id: string;
  pid: number;
  type: string;
  name?: string;
  names?: string[];
  reason?: string;
  code?: string;
  user?: string;
  /** `added`: when the member's credential expires (epoch ms). */
  expiresAt?: number;
  /** `status`: the standby the fleet reports. */
  standby?: { shards: number[]; members: number; ready: number };
}

interface Replica {
  id: string;
  child: ChildProcess;
  records: LogRecord[];
  /** When it was SIGKILLed (its use of members ends there). */
  killedAt?: number;
}

const replicas: Replica[] = [];
let hubKubeconfig = '';
let providersFile = '';
let workDir = '';

async function admin(args: string[], input?: string): Promise<string> {
  const { controlPlane } = e2eContext();
  const result = await kubectl(controlPlane.adminKubeconfig, args, input === undefined ? {} : { input });
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

function startReplica(
  id: string,
  kubeconfig = hubKubeconfig,
  { list = replicas, ...overrides }: { list?: Replica[] } & Record<string, unknown> = {},
): Replica {
  const config = {
    identity: id,
    namespace: NS,
    hubKubeconfig: kubeconfig,
    providersFile,
    cacheDir: path.join(workDir, `cache-${id}`),
    touchMs: TOUCH_MS,
    ...overrides,
    sharding: { identity: id, ...SHARDING, ...(overrides['sharding'] as object | undefined) },
  };
  const child = spawn(process.execPath, [REPLICA, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const replica: Replica = { id, child, records: [] };
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    const lines = buffer.split('\n');
    buffer = lines.pop()!;
    for (const line of lines) if (line !== '') replica.records.push(JSON.parse(line) as LogRecord);
  });
  child.stderr!.resume();
  list.push(replica);
  return replica;
}

/** Members a replica process has engaged now, by its own log. */
function engagedBy(replica: Replica): Set<string> {
  const engaged = new Set<string>();
  if (replica.killedAt !== undefined || replica.child.exitCode !== null) return engaged;
  for (const record of replica.records) {
    if (record.type === 'added') engaged.add(record.name!);
    if (record.type === 'removed') engaged.delete(record.name!);
  }
  return engaged;
}

/** Member → the live replicas that have it engaged. */
function owners(): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const replica of replicas)
    for (const name of engagedBy(replica)) map.set(name, [...(map.get(name) ?? []), replica.id]);
  return map;
}

async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 60_000): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Waits until every member is engaged by exactly one replica: the one rendezvous hashing gives its shard among `ids`. */
function steady(ids: string[], timeoutMs = 60_000): Promise<Map<string, string>> {
  return waitFor(
    `every member engaged once, by its owner among ${ids.join(', ')}`,
    () => {
      const map = owners();
      if (map.size !== N) return false;
      const single = new Map<string, string>();
      for (const [name, holders] of map) {
        if (holders.length !== 1 || holders[0] !== rendezvousOwner(shardOf(name, SHARDS), ids)) return false;
        single.set(name, holders[0]!);
      }
      return single;
    },
    timeoutMs,
  );
}

/** The shard Leases' holders, from the API server. */
async function leaseHolders(): Promise<Map<number, string | undefined>> {
  const list = JSON.parse(await admin(['get', 'leases', '-n', LEASES, '-o', 'json'])) as {
    items: { metadata: { name: string }; spec: { holderIdentity?: string } }[];
  };
  const holders = new Map<number, string | undefined>();
  for (const item of list.items) {
    const match = /-shard-(\d+)$/.exec(item.metadata.name);
    if (match !== null) holders.set(Number(match[1]), item.spec.holderIdentity);
  }
  return holders;
}

/**
 * Each replica's spans of use of each member — from `added` to its last `touch` (or `reached`) before its `removed`,
 * SIGKILL or the end — must not overlap another replica's span of the same member.
 */
function servedTwice(): string[] {
  const late: string[] = [];
  const spans = new Map<string, { id: string; from: number; to: number }[]>();
  for (const replica of replicas) {
    const open = new Map<string, { from: number; to: number }>();
    const close = (name: string) => {
      const span = open.get(name);
      if (span === undefined) return;
      open.delete(name);
      spans.set(name, [...(spans.get(name) ?? []), { id: `${replica.id}/${replica.child.pid}`, ...span }]);
    };
    for (const record of replica.records) {
      if (replica.killedAt !== undefined && record.t > replica.killedAt) break;
      if (record.type === 'added') {
        open.set(record.name!, { from: record.t, to: record.t });
      } else if (record.type === 'reached') {
        // A request answered: the member was used until then. Its client is revoked at `removed` (requests in flight
        // aborted), so an answer after `removed` would be a use by a replica that no longer owns it.
        const span = open.get(record.name!);
        if (span === undefined) late.push(`${record.name}: answered at ${record.t} after ${replica.id} removed it`);
        else span.to = record.t;
      } else if (record.type === 'touch') {
        for (const name of record.names!) {
          const span = open.get(name);
          if (span !== undefined) span.to = record.t;
        }
      } else if (record.type === 'removed') {
        close(record.name!);
      }
    }
    for (const name of [...open.keys()]) close(name);
  }
  const problems: string[] = [...late];
  for (const [name, list] of spans) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      const before = list[i - 1]!;
      const after = list[i]!;
      if (before.id !== after.id && after.from <= before.to)
        problems.push(`${name}: ${before.id} used it until ${before.to}, ${after.id} from ${after.from}`);
    }
  }
  return problems;
}

/** The kube-apiserver process of the shared control plane (its working directory is the control plane's). */
function apiServerPid(): number {
  const { controlPlane } = e2eContext();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'kube-apiserver') continue;
      if (readlinkSync(`/proc/${entry}/cwd`) === controlPlane.workDir) return Number(entry);
    } catch {
      // a process that ended meanwhile
    }
  }
  throw new Error('kube-apiserver of the e2e control plane not found');
}

beforeAll(async () => {
  const { controlPlane } = e2eContext();
  workDir = await mkdtemp(path.join(controlPlane.workDir, 'shard-'));
  await admin(['apply', '-f', path.join(repo, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml')]);
  await admin(['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io']);
  for (const ns of [NS, LEASES, SA_NS]) await admin(['create', 'namespace', ns]);
  await admin(['create', 'serviceaccount', 'member', '-n', SA_NS]);
  await applyAsAdmin(fleetRbac({ inventory: NS, accounts: SA_NS, hubUser: HUB_USER, minter: MINTER }));
  // The Lease rights of the example Deployment, bound to the test's hub user in the test's lease namespace.
  const shipped = parseAllDocuments(
    await readFile(path.join(repo, 'deploy/examples/sharded-controller/rbac.yaml'), 'utf8'),
  )
    .map(
      (document) => document.toJS() as { kind: string; metadata: { name: string; namespace: string }; rules?: unknown },
    )
    .find((object) => object.kind === 'Role' && object.metadata.name === 'hub-controller-leases')!;
  await applyAsAdmin({
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { ...shipped, metadata: { name: 'shard-leases', namespace: LEASES } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'shard-leases', namespace: LEASES },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'shard-leases' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: HUB_USER }],
      },
    ],
  });
  hubKubeconfig = await clientCertKubeconfig(HUB_USER);
  const minterKubeconfig = await clientCertKubeconfig(MINTER);
  providersFile = path.join(workDir, 'providers.json');
  await writeFile(
    providersFile,
    JSON.stringify({
      providers: [
        {
          name: 'token-request',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: 'clusterprofile-token-request',
            args: ['--bootstrap-kubeconfig', minterKubeconfig],
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ],
    }),
  );
  // N profiles, token-request members of one ServiceAccount (one credential: the API server's audience, so that each
  // member can be reached), created as a cluster manager does: the object, then its status.
  const caPem = await readFile(controlPlane.caFile, 'utf8');
  const access = await loadKubeAccess({ kubeconfig: controlPlane.adminKubeconfig }, { env: {}, cwd: repo });
  const kube = createKubeTransport(access.endpoint, access.credential, { timeoutMs: 60_000 });
  await createBenchProfiles(kube, NS, N, 0, () => ({
    accessProviders: [
      {
        name: 'token-request',
        cluster: {
          server: controlPlane.server,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          extensions: [
            {
              name: 'client.authentication.k8s.io/exec',
              extension: { namespace: SA_NS, serviceAccount: 'member', expirationSeconds: 3600 },
            },
          ],
        },
      },
    ],
  }));
  await kube.close();
});

/** The replicas of the standby scenario (their own inventory, apart from {@link replicas}). */
const standbyReplicas: Replica[] = [];

afterAll(async () => {
  if (process.env['CPC_SHARD_E2E_LOGS'] !== undefined)
    for (const replica of [...replicas, ...standbyReplicas])
      await writeFile(
        path.join(process.env['CPC_SHARD_E2E_LOGS'], `${replica.id}-${replica.child.pid}.jsonl`),
        replica.records.map((record) => JSON.stringify(record)).join('\n'),
      );
  try {
    process.kill(apiServerPid(), 'SIGCONT');
  } catch {
    // not stopped
  }
  await Promise.all(
    [...replicas, ...standbyReplicas].map(
      (replica) =>
        new Promise<void>((resolve) => {
          if (replica.child.exitCode !== null || replica.child.signalCode !== null) return resolve();
          replica.child.kill('SIGCONT');
          replica.child.once('exit', () => resolve());
          replica.child.kill('SIGKILL');
        }),
    ),
  );
  await admin(['delete', 'namespace', NS, STANDBY_NS, LEASES, SA_NS, '--wait=false']).catch(() => undefined);
});

describe('ClusterProfileFleet sharded over three replica processes', () => {
  let a: Replica;
  let b: Replica;
  let c: Replica;

  it('steady state: every member engaged by exactly one replica, the holder of its shard, and reached', async () => {
    a = startReplica('replica-a');
    b = startReplica('replica-b');
    c = startReplica('replica-c');
    const owner = await steady(['replica-a', 'replica-b', 'replica-c']);
    const holders = await leaseHolders();
    for (const [name, id] of owner) expect(holders.get(shardOf(name, SHARDS)), name).toBe(id);
    for (const replica of [a, b, c]) expect(engagedBy(replica).size).toBeGreaterThan(0);
    // Reached through its own client as the member's identity.
    await waitFor('every member reached', () => {
      const reached = new Set(
        replicas.flatMap((r) => r.records.filter((x) => x.type === 'reached').map((x) => x.name)),
      );
      return reached.size === N;
    });
    const users = new Set(replicas.flatMap((r) => r.records.filter((x) => x.type === 'reached').map((x) => x.user)));
    expect([...users]).toEqual([`system:serviceaccount:${SA_NS}:member`]);
    expect(servedTwice()).toEqual([]);
  });

  it('SIGKILL of one replica: its members engaged by the others within the lease and a few seconds', async () => {
    const lost = engagedBy(c);
    c.killedAt = performance.timeOrigin + performance.now();
    c.child.kill('SIGKILL');
    await steady(['replica-a', 'replica-b']);
    const takenAt = [...lost].map((name) =>
      Math.min(
        ...[a, b].flatMap((r) =>
          r.records.filter((x) => x.type === 'added' && x.name === name && x.t > c.killedAt!).map((x) => x.t),
        ),
      ),
    );
    const failover = (Math.max(...takenAt) - c.killedAt) / 1000;
    console.log(
      `fail-over of ${lost.size} members after SIGKILL: ${failover.toFixed(2)} s (lease ${LEASE_S} s, renew 1 s)`,
    );
    expect(failover).toBeLessThanOrEqual(LEASE_S + 7);
    expect(servedTwice()).toEqual([]);
  });

  it('SIGSTOP past the lease, then SIGCONT: the paused replica says removed for what it lost before touching any', async () => {
    c = startReplica('replica-c');
    await steady(['replica-a', 'replica-b', 'replica-c']);
    const held = engagedBy(b);
    b.child.kill('SIGSTOP');
    const stoppedAt = performance.timeOrigin + performance.now();
    // Its members move to the others while it sleeps.
    await waitFor('the paused replica’s members engaged elsewhere', () => {
      const map = owners();
      return [...held].every((name) => (map.get(name) ?? []).some((id) => id !== 'replica-b'));
    });
    const contAt = performance.timeOrigin + performance.now();
    expect(contAt - stoppedAt).toBeGreaterThan(LEASE_S * 1000);
    b.child.kill('SIGCONT');
    await steady(['replica-a', 'replica-b', 'replica-c']);
    const after = b.records.filter((record) => record.t >= contAt);
    for (const name of held) {
      const first = after.find((record) => record.name === name || record.names?.includes(name));
      expect(first, name).toMatchObject({ type: 'removed', reason: 'fenced' });
    }
    expect(servedTwice()).toEqual([]);
  });

  it('a fourth replica joins: about a quarter of the members move, all to it, nothing else', async () => {
    const before = await steady(['replica-a', 'replica-b', 'replica-c']);
    const d = startReplica('replica-d');
    const after = await steady(['replica-a', 'replica-b', 'replica-c', 'replica-d']);
    const moved = [...before].filter(([name, id]) => after.get(name) !== id);
    for (const [name] of moved) expect(after.get(name), name).toBe('replica-d');
    console.log(`a fourth replica: ${moved.length} of ${N} members moved (${((moved.length / N) * 100).toFixed(1)} %)`);
    expect(moved.length / N).toBeGreaterThan(0.12);
    expect(moved.length / N).toBeLessThan(0.4);
    expect(engagedBy(d).size).toBe(moved.length);
    expect(servedTwice()).toEqual([]);

    // `clusterprofile fleet status --lease-namespace`: the owner of each member, read from the Leases, and the replicas.
    const env = { ...process.env, KUBECONFIG: hubKubeconfig, KUBECACHEDIR: path.join(workDir, 'cache-cli') };
    const args = [
      CLI,
      'fleet',
      'status',
      '-n',
      NS,
      '--clusterprofile-provider-file',
      providersFile,
      '--lease-namespace',
      LEASES,
    ];
    const table = await exec(process.execPath, args, { env });
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+PROVIDER\s+STATE\s+EXPIRES\s+OWNER\s+LAST ERROR$/);
    for (const [name, id] of after)
      expect(
        lines.find((line) => line.startsWith(`${name} `)),
        name,
      ).toMatch(new RegExp(`\\s${id}\\s`));
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^replicas in ${LEASES}: replica-a \\(\\d+ shards\\), replica-b .*replica-d \\(\\d+ shards\\); ${SHARDS} shards, 0 free$`,
      ),
    );
    const json = JSON.parse((await exec(process.execPath, [...args, '-o', 'json'], { env })).stdout) as {
      clusters: { name: string; owner: string }[];
    };
    expect(new Map(json.clusters.map((row) => [row.name, row.owner]))).toEqual(after);
  });

  it('kube-apiserver stopped for longer than the lease: the replicas fence, then share the members out again', async () => {
    const pid = apiServerPid();
    const stoppedAt = performance.timeOrigin + performance.now();
    process.kill(pid, 'SIGSTOP');
    try {
      await new Promise((resolve) => setTimeout(resolve, LEASE_S * 1000 + 2_000));
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await steady(['replica-a', 'replica-b', 'replica-c', 'replica-d'], 90_000);
    const fenced = replicas.flatMap((r) =>
      r.records.filter((x) => x.type === 'removed' && x.reason === 'fenced' && x.t > stoppedAt),
    );
    expect(fenced.length).toBeGreaterThan(0);
    expect(servedTwice()).toEqual([]);
  });

  it('a replica whose identity may not write Leases: ERR_FLEET_LEASE_FORBIDDEN logged, it engages nothing', async () => {
    const outsider = await clientCertKubeconfig('e2e-shard-no-leases');
    const e = startReplica('replica-e', outsider);
    const error = await waitFor('a lease error', () =>
      e.records.find((x) => x.type === 'leaseError' || x.type === 'startFailed'),
    );
    expect(error.code).toBe('ERR_FLEET_LEASE_FORBIDDEN');
    expect(engagedBy(e).size).toBe(0);
    e.child.kill('SIGKILL');
  });
});

describe('ClusterProfileFleet sharded with standby', () => {
  it('SIGKILL of one replica: the others engage its members with the credentials they already held, within the lease and a few seconds', async () => {
    const { controlPlane } = e2eContext();
    await admin(['create', 'namespace', STANDBY_NS]);
    await admin(['create', 'serviceaccount', 'bench', '-n', SA_NS]);
    await applyAsAdmin(fleetRbac({ inventory: STANDBY_NS, accounts: SA_NS, hubUser: HUB_USER, minter: MINTER }));
    const caPem = await readFile(controlPlane.caFile, 'utf8');
    const access = await loadKubeAccess({ kubeconfig: controlPlane.adminKubeconfig }, { env: {}, cwd: repo });
    const kube = createKubeTransport(access.endpoint, access.credential, { timeoutMs: 60_000 });
    await createBenchProfiles(kube, STANDBY_NS, STANDBY_N, 0, (i: number) =>
      benchProfileStatus(i, { server: controlPlane.server, caPem, accountNamespace: SA_NS }),
    );
    await kube.close();
    const ids = ['standby-a', 'standby-b', 'standby-c'];
    const started = ids.map((id) =>
      startReplica(id, hubKubeconfig, {
        list: standbyReplicas,
        namespace: STANDBY_NS,
        touchMs: 0,
        statusMs: 250,
        reach: false,
        sharding: { leaseNamePrefix: 'standby', standby: true },
      }),
    );
    const lastStatus = (replica: Replica) => replica.records.findLast((x) => x.type === 'status')?.standby;
    const engagedOnce = () => {
      const counts = new Map<string, number>();
      for (const replica of standbyReplicas)
        for (const name of engagedBy(replica)) counts.set(name, (counts.get(name) ?? 0) + 1);
      return counts.size === STANDBY_N && [...counts.values()].every((count) => count === 1);
    };
    await waitFor('every member engaged once and every replica holding its standby credentials', () => {
      if (!engagedOnce()) return false;
      return started.every((replica) => {
        const standby = lastStatus(replica);
        return standby !== undefined && standby.members > 0 && standby.ready === standby.members;
      });
    });
    // Each replica stands by for the members it would inherit: every member not its own, of the shards it is heir of.
    for (const replica of started) {
      const standby = lastStatus(replica)!;
      const heirOf = (name: string) => {
        const shard = shardOf(name, SHARDS);
        const owner = rendezvousOwner(shard, ids);
        return rendezvousOwner(
          shard,
          ids.filter((id) => id !== owner),
        );
      };
      const expected = Array.from({ length: STANDBY_N }, (_, i) => `c-${String(i).padStart(5, '0')}`).filter(
        (name) => heirOf(name) === replica.id,
      );
      expect(standby.members, replica.id).toBe(expected.length);
    }

    const victim = started.reduce((most, replica) => (engagedBy(replica).size > engagedBy(most).size ? replica : most));
    const lost = engagedBy(victim);
    expect(lost.size).toBeGreaterThan(0);
    victim.killedAt = performance.timeOrigin + performance.now();
    victim.child.kill('SIGKILL');
    await waitFor('the killed replica’s members engaged by the others', engagedOnce, 60_000);
    const survivors = started.filter((replica) => replica !== victim);
    const taken = [...lost].map(
      (name) =>
        survivors
          .flatMap((replica) => replica.records)
          .find((x) => x.type === 'added' && x.name === name && x.t > victim.killedAt!)!,
    );
    const failover = (Math.max(...taken.map((x) => x.t)) - victim.killedAt) / 1000;
    console.log(
      `standby fail-over of ${lost.size} members after SIGKILL: ${failover.toFixed(2)} s (lease ${LEASE_S} s)`,
    );
    expect(failover).toBeLessThanOrEqual(LEASE_S + 3);
    // Each was engaged with a credential obtained before the kill: its token (3600 s) expires sooner than one
    // fetched after the kill would.
    for (const record of taken) expect(record.expiresAt, record.name).toBeLessThan(victim.killedAt + 3600 * 1000);
  });
});
