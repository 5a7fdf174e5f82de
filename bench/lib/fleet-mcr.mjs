/**
 * multicluster-runtime's side of the fleet benches (bench/fleet-mcr, Go): built once per run, then run as one
 * process (the cluster-inventory-api provider engaging every profile) or as several replicas under its sharded
 * coordinator (peer Leases, rendezvous hashing, a fence Lease per cluster).
 *
 * The replicas' own event lines (engaged / disengaged with the wall clock, one machine) are the evidence: time to
 * all engaged, fail-over after SIGKILL, and members engaged by two replicas at once. API-server writes are read
 * from kube-apiserver's own counters (apiserver_request_total for Leases), the same way for any coordinator.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { goEnv } from '../../test/e2e/controlplane/build.mjs';

/**
 * Builds bench/fleet-mcr into `work`. From the Go module proxy (the caches outside the clone, as for the control
 * plane); with CPC_MCR_SOURCE, from that directory instead (the providers/cluster-inventory-api directory of
 * multicluster-runtime v0.24.1) — for a proxy that does not serve the submodule (it is its own module, so
 * multicluster-runtime's own zip leaves it out). Returns { binary } or { skipped: why }.
 */
export function buildFleetMcr({ root, work, env = process.env }) {
  const source = env.CPC_MCR_SOURCE;
  const dir = join(root, 'bench/fleet-mcr');
  const modfile = join(work, 'fleet-mcr.mod');
  writeFileSync(modfile, readFileSync(join(dir, 'go.mod')));
  writeFileSync(join(work, 'fleet-mcr.sum'), readFileSync(join(dir, 'go.sum')));
  const binary = join(work, 'fleet-mcr');
  // The submodule's checksum is not in go.sum (it cannot be fetched everywhere): taken from the proxy as served.
  const goVars = goEnv(env);
  const buildEnv = { ...goVars, GONOSUMDB: 'sigs.k8s.io/multicluster-runtime', GOFLAGS: `${goVars.GOFLAGS} -mod=mod` };
  const go = (args) => spawnSync('go', args, { cwd: dir, env: buildEnv, encoding: 'utf8' });
  let result = { status: 0, stderr: '' };
  if (source !== undefined && source !== '') {
    result = go([
      'mod',
      'edit',
      `-modfile=${modfile}`,
      `-replace=sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api=${source}`,
    ]);
  }
  if (result.status === 0) result = go(['build', `-modfile=${modfile}`, '-o', binary, '.']);
  if (result.status === 0) return { binary };
  const why = result.stderr.trim().split('\n').slice(-2).join(' ');
  return {
    skipped:
      source === undefined || source === ''
        ? `the module sigs.k8s.io/multicluster-runtime/providers/cluster-inventory-api@v0.24.1 could not be fetched (${why}); set CPC_MCR_SOURCE to its source directory`
        : `go build with CPC_MCR_SOURCE=${source} failed: ${why}`,
  };
}

/**
 * Writes to Leases the API server has answered so far (POST, PUT, PATCH, APPLY), from its own
 * apiserver_request_total counters: the same count whichever process wrote them.
 */
export function leaseWrites(kubeconfig) {
  const text = execFileSync('kubectl', ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  let writes = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    if (!line.includes('resource="leases"') || !/verb="(POST|PUT|PATCH|APPLY)"/.test(line)) continue;
    writes += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return writes;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One replica process: its latest 200 ms line and every engaged/disengaged event it printed. */
function startReplica({ binary, id, hubKubeconfig, namespace, providersFile, leaseNamespace, lease }) {
  const child = spawn(
    binary,
    [
      '--hub-kubeconfig',
      hubKubeconfig,
      '--namespace',
      namespace,
      '--providers-file',
      providersFile,
      '--peer-id',
      id,
      '--lease-namespace',
      leaseNamespace,
      '--lease-duration',
      `${lease.durationSeconds}s`,
      '--lease-renew',
      `${lease.renewSeconds}s`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const replica = { id, child, last: { owned: 0 }, events: [], exited: undefined, killedAt: undefined, stderr: '' };
  let buffer = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    buffer += chunk;
    const lines = buffer.split('\n');
    buffer = lines.pop();
    for (const line of lines) {
      if (line.trim() === '') continue;
      const parsed = JSON.parse(line);
      if (parsed.event !== undefined) replica.events.push(parsed);
      else replica.last = parsed;
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    replica.stderr = (replica.stderr + chunk).slice(-2_000);
  });
  child.on('exit', (code, signal) => (replica.exited = `${id} exited (${code ?? signal}): ${replica.stderr.trim()}`));
  replica.rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  return replica;
}

/** The members each replica has engaged and not yet disengaged, from its events (up to `until`, Unix ms). */
function ownedSets(replicas, until = Number.POSITIVE_INFINITY) {
  return replicas.map((replica) => {
    const live = new Map();
    for (const event of replica.events) {
      if (event.t > until) break;
      live.set(event.cluster, (live.get(event.cluster) ?? 0) + (event.event === 'engaged' ? 1 : -1));
    }
    return new Set([...live].filter(([, count]) => count > 0).map(([cluster]) => cluster));
  });
}

/**
 * Members engaged by two live replicas at one instant: every replica's engagement intervals (a killed replica's end
 * at its kill), checked pairwise per member. Returns the number of members with an overlap and the longest one (ms).
 */
export function doubleOwnership(replicas, end) {
  const intervals = new Map();
  for (const replica of replicas) {
    const open = new Map();
    const stop = replica.killedAt ?? end;
    for (const event of replica.events) {
      if (event.t > stop) break;
      if (event.event === 'engaged') open.set(event.cluster, event.t);
      else if (open.has(event.cluster)) {
        const list = intervals.get(event.cluster) ?? [];
        list.push([open.get(event.cluster), event.t, replica.id]);
        intervals.set(event.cluster, list);
        open.delete(event.cluster);
      }
    }
    for (const [cluster, from] of open) {
      const list = intervals.get(cluster) ?? [];
      list.push([from, stop, replica.id]);
      intervals.set(cluster, list);
    }
  }
  let members = 0;
  let longestMs = 0;
  for (const list of intervals.values()) {
    list.sort((a, b) => a[0] - b[0]);
    let overlapping = false;
    for (let i = 1; i < list.length; i++) {
      for (let j = 0; j < i; j++) {
        if (list[j][2] === list[i][2]) continue;
        const overlap = Math.min(list[j][1], list[i][1]) - list[i][0];
        if (overlap > 0) {
          overlapping = true;
          longestMs = Math.max(longestMs, overlap);
        }
      }
    }
    if (overlapping) members++;
  }
  return { members, longestMs };
}

/**
 * Runs `replicas` sharded replicas of bench/fleet-mcr over the `members` profiles of `namespace`: time to every
 * member engaged by exactly one replica, RSS per replica, Lease writes per second over `steadySeconds` of steady
 * state, then SIGKILL of the first replica and the time until the others have engaged all of its members, and
 * the members engaged by two replicas at once over the whole run.
 */
export async function runMcrSharded({
  binary,
  hubKubeconfig,
  namespace,
  providersFile,
  replicas: count,
  members,
  leaseNamespace,
  lease = { durationSeconds: 20, renewSeconds: 10 },
  steadySeconds = 30,
  limitSeconds = Math.max(120, members / 20),
}) {
  const started = Date.now();
  const replicas = Array.from({ length: count }, (_, i) =>
    startReplica({ binary, id: `mcr-${i}`, hubKubeconfig, namespace, providersFile, leaseNamespace, lease }),
  );
  const elapsed = () => (Date.now() - started) / 1000;
  const exited = () => replicas.find((replica) => replica.exited !== undefined)?.exited;
  const coverage = (live) => {
    const sets = ownedSets(live);
    const union = new Set();
    for (const set of sets) for (const cluster of set) union.add(cluster);
    return { union: union.size, sum: sets.reduce((total, set) => total + set.size, 0), sets };
  };
  try {
    let covered = coverage(replicas);
    while ((covered.union < members || covered.sum !== covered.union) && elapsed() < limitSeconds && !exited()) {
      await sleep(200);
      covered = coverage(replicas);
    }
    if (exited()) return { skipped: exited() };
    const readySeconds = covered.union >= members && covered.sum === covered.union ? elapsed() : undefined;
    const result = {
      replicas: count,
      members,
      lease,
      readySeconds,
      readyAtLimit: covered.union,
      limitSeconds,
      ownedPerReplica: covered.sets.map((set) => set.size),
      engagedPerReplica: replicas.map((replica) => replica.last.engaged),
    };
    if (readySeconds === undefined) return result;
    await sleep(Math.max(5, lease.renewSeconds) * 1000);
    result.rssPerReplica = replicas.map((replica) => replica.rss());
    const before = leaseWrites(hubKubeconfig);
    const window = performance.now();
    await sleep(steadySeconds * 1000);
    result.leaseWritesPerSecond = (leaseWrites(hubKubeconfig) - before) / ((performance.now() - window) / 1000);

    const victim = replicas[0];
    const lost = [...ownedSets([victim])[0]];
    victim.killedAt = Date.now();
    victim.child.kill('SIGKILL');
    const survivors = replicas.slice(1);
    const failStarted = Date.now();
    // multicluster-runtime's peer Leases last 30 s (not configurable in v0.24.1): a dead peer counts until then.
    const failLimit = (30 + lease.durationSeconds + 120) * 1000;
    let missing = lost.length;
    while (Date.now() - failStarted < failLimit) {
      const union = new Set();
      for (const set of ownedSets(survivors)) for (const cluster of set) union.add(cluster);
      missing = lost.filter((cluster) => !union.has(cluster)).length;
      if (missing === 0) break;
      await sleep(200);
    }
    result.failover = {
      members: lost.length,
      seconds: missing === 0 ? (Date.now() - failStarted) / 1000 : undefined,
      missingAtLimit: missing,
    };
    result.doubleOwned = doubleOwnership(replicas, Date.now());
    return result;
  } finally {
    for (const replica of replicas) if (replica.exited === undefined) replica.child.kill('SIGKILL');
  }
}
