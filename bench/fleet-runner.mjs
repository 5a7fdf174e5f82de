// One ClusterProfileFleet run for bench/fleet.bench.mjs, in its own process (so its RSS and CPU are its own):
// start → settled, then optionally status-only and access-changing updates; prints one JSON line of figures.
//   node --expose-gc bench/fleet-runner.mjs '<json config>'
import { readFileSync } from 'node:fs';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { createKubeTransport } from '../dist/kube/transport.js';
import { loadKubeAccess } from '../dist/kube/kubeconfig-loader.js';
import { ClusterProfileFleet } from '../dist/library/index.js';

const config = JSON.parse(process.argv[2]);
const gc = globalThis.gc ?? (() => {});

/** CPU seconds of this process and of its waited-for children (plugin processes), from /proc. */
function cpuSeconds() {
  const own = process.cpuUsage();
  let children = 0;
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    // Fields 16 and 17 of stat (cutime, cstime) are the 14th and 15th after the command name, in clock ticks.
    children = (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    children = Number.NaN;
  }
  return { own: (own.user + own.system) / 1e6, children };
}

/** V8's young and old generation (old space and large objects), committed and used, in bytes. */
function spaces() {
  const byName = Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name, space]));
  const old = ['old_space', 'large_object_space'].map((name) => byName[name] ?? { space_size: 0, space_used_size: 0 });
  return {
    young: byName.new_space?.space_size ?? 0,
    old: old.reduce((sum, space) => sum + space.space_size, 0),
    oldUsed: old.reduce((sum, space) => sum + space.space_used_size, 0),
  };
}

/** After a second of idleness (V8's memory reducer) and full collections. */
async function memory() {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  gc();
  gc();
  const usage = process.memoryUsage();
  return {
    rss: usage.rss,
    heap: usage.heapUsed + usage.external + usage.arrayBuffers,
    heapTotal: usage.heapTotal,
    spaces: spaces(),
  };
}

const accessConfig = JSON.parse(readFileSync(config.providersFile, 'utf8'));
const options = (namespace) => ({
  namespace,
  accessConfig,
  hub: { kubeconfig: config.hubKubeconfig },
  env: { ...process.env, KUBECACHEDIR: config.cacheDir },
  inProcess: config.inProcess,
  maxConcurrentFetches: config.maxConcurrentFetches ?? 16,
  maxConcurrentProcesses: config.maxConcurrentProcesses ?? 4,
  fetchTimeoutMs: 60_000,
  clients: config.clients !== false,
});
// The baseline: this process after a fleet over an empty namespace ran (every module loaded, a watch opened) and closed.
const empty = new ClusterProfileFleet(options(config.emptyNamespace));
await empty.start();
await empty.settled();
await empty.close();
if (config.warmNamespace !== undefined) {
  // One member's credential obtained as the measured fleet will obtain them: the issuance path loaded and compiled.
  const warm = new ClusterProfileFleet(options(config.warmNamespace));
  await warm.start();
  await warm.settled();
  await warm.close();
}
const before = await memory();
const cpu0 = cpuSeconds();
const fleet = new ClusterProfileFleet(options(config.namespace));
let updated = 0;
let added = 0;
fleet.on('updated', () => (updated += 1));
fleet.on('added', () => (added += 1));
const started = performance.now();
await fleet.start();
const listedSeconds = (performance.now() - started) / 1000;
await fleet.settled();
const readySeconds = (performance.now() - started) / 1000;
const cpu1 = cpuSeconds();
// Where the process stands when the last credential arrived, before any collection: V8's spaces as committed (what
// RSS holds: V8 keeps the pages a space grew to, also after a full collection) and used.
const spacesAtReady = spaces();
const rssAtReady = process.memoryUsage().rss;
const status = fleet.status();
const after = await memory();
const result = {
  members: status.clusters.length,
  counts: status.counts,
  added,
  listedSeconds,
  readySeconds,
  cpuOwnSeconds: cpu1.own - cpu0.own,
  cpuChildrenSeconds: cpu1.children - cpu0.children,
  fetches: status.clusters.reduce((sum, row) => sum + row.fetches, 0),
  slots: status.credentials.slots,
  rssAtReady,
  spacesBefore: before.spaces,
  spacesAtReady,
  rssBefore: before.rss,
  rssAfter: after.rss,
  heapBefore: before.heap,
  heapAfter: after.heap,
  heapTotalBefore: before.heapTotal,
  heapTotalAfter: after.heapTotal,
  errors: [...new Set(status.clusters.filter((row) => row.lastError).map((row) => row.lastError.code))],
  // What Node saw of a memory limit (the cgroup's; 2^64 without one) and the heap V8 sized from it.
  constrainedMemory: process.constrainedMemory(),
  heapSizeLimit: getHeapStatistics().heap_size_limit,
};

if (config.updates > 0) {
  // Status-only updates (a condition's lastTransitionTime), written as a cluster manager writes them.
  const admin = await loadKubeAccess({ kubeconfig: config.adminKubeconfig }, { env: {}, cwd: process.cwd() });
  const kube = createKubeTransport(admin.endpoint, admin.credential, { timeoutMs: 60_000 });
  const names = status.clusters.slice(0, config.updates).map((row) => row.name);
  const patch = async (name, body) => {
    const response = await kube.send({
      method: 'PATCH',
      path: `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/${config.namespace}/clusterprofiles/${name}/status`,
      body,
      contentType: 'application/merge-patch+json',
    });
    if (response.status !== 200) throw new Error(`patch ${name}: HTTP ${response.status}`);
    return response.body.metadata.resourceVersion;
  };
  const stamp = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
  let last = '0';
  for (let i = 0; i < names.length; i += 32) {
    const rvs = await Promise.all(
      names.slice(i, i + 32).map((name) =>
        patch(name, {
          status: {
            conditions: [
              {
                type: 'ControlPlaneHealthy',
                status: 'True',
                reason: 'Probe',
                message: 'bench',
                lastTransitionTime: stamp,
              },
            ],
          },
        }),
      ),
    );
    for (const rv of rvs) if (BigInt(rv) > BigInt(last)) last = rv;
  }
  const seen = async (rv) => {
    for (let i = 0; i < 1200; i += 1) {
      const current = fleet.status().hub.resourceVersion;
      if (current !== undefined && BigInt(current) >= BigInt(rv)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the fleet did not see resourceVersion ${rv}`);
  };
  await seen(last);
  result.statusOnlyUpdates = names.length;
  result.rebuildsAfterStatusOnly = fleet.list().reduce((sum, member) => sum + member.rebuilds, 0);
  result.updatedEventsAfterStatusOnly = updated;
  // One access change, as a check that the count above could move.
  const profile = JSON.parse(JSON.stringify(config.sampleStatus));
  profile.accessProviders[0].cluster['tls-server-name'] = 'localhost';
  await seen(await patch(names[0], { status: profile }));
  result.rebuildsAfterOneAccessChange = fleet.list().reduce((sum, member) => sum + member.rebuilds, 0);
  await kube.close();
}

if (config.second) {
  // The marginal cost of a member: a second fleet of the same members in this process, whose one-time growth (V8's
  // young generation, malloc arenas, compiled code) the first fleet already paid for.
  const second = new ClusterProfileFleet(options(config.namespace));
  await second.start();
  await second.settled();
  const again = await memory();
  result.marginalRss = again.rss - after.rss;
  result.marginalHeap = again.heap - after.heap;
  await second.close();
}

await fleet.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
