// ClusterProfileFleet on the real control plane of the e2e layer (etcd, kube-apiserver, kube-controller-manager built
// from Go modules: npm run controlplane:build). N ClusterProfiles in one namespace, each a token-request member with
// its own audience (so each has its own credential: one TokenRequest per member against the real API server).
//
//   npm run build && npm exec -- node --expose-gc bench/fleet.bench.mjs [--clusters 300] [--exec-sample 100] [--updates 500]
//   npm exec -- node --expose-gc bench/fleet.bench.mjs --clusters 10000 [--cold-runs 3]
//   ... --cpu-prof --keep: a CPU profile of each fleet run in the kept work directory's profiles/
//   ... --memory-limit 1Gi[,2Gi,none]: every fleet process (and `node -e 0`) in its own memory cgroup limited to the
//       first size, as in a pod with resources.limits.memory (Node sizes V8's heap from it); each further size (or
//       none: no cgroup) adds cold starts under it, printed side by side. Needs a writable memory cgroup (root):
//       without one the bench says so and runs without a limit.
//
// Prints, each fleet run in its own process (bench/fleet-runner.mjs):
//  1. in-process, cold cache (--cold-runs of them, each on an empty cache: median and spread): seconds from start()
//     to every member ready; the time split (CPU of the fleet, kube-apiserver and etcd, the load average); RSS and
//     heap per member over the same process after a fleet over an empty namespace ran and closed (every module
//     loaded), and `node -e 0`'s RSS;
//  2. in-process, warm cache (a restart: every credential served from the shared cache);
//  3. one credential per member, in-process vs exec'd plugins (clusterprofile-token-request run as a process per
//     member), on the same sample of members with cold caches, each after a one-member fleet warmed the issuance
//     path (as in a running fleet): CPU seconds per credential (the work of one renewal cycle) and the ratio;
//  4. status-only updates (a condition's lastTransitionTime) on many members: client rebuilds and `updated` events;
//  5. side by side, multicluster-runtime's cluster-inventory-api provider (bench/fleet-mcr, built from the Go module
//     proxy, or from CPC_MCR_SOURCE) engaging the same profiles: time to all engaged, RSS, re-engagements on
//     status-only updates.
// With --replicas N the bench is the sharded fleet over N replica processes instead (bench/fleet-replicas.mjs).
// Targets (2 cores): 10 000 ready <= 30 s; <= 20 KiB RSS per idle member; in-process >= 20x cheaper in CPU than exec;
// zero rebuilds on status-only updates. Reported MET / NOT MET; they do not fail the run.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureControlPlaneBinaries } from '../test/e2e/controlplane/build.mjs';
import {
  findMemoryCgroup,
  formatLimit,
  parseMemoryLimits,
  spawnLimited,
  spawnSyncLimited,
} from './lib/memory-cgroup.mjs';
import { benchProfileStatus, createBenchProfiles } from './lib/fleet-profiles.mjs';
import { buildFleetMcr } from './lib/fleet-mcr.mjs';
import { controlPlaneCpu, cpuSince } from './lib/process-cpu.mjs';
import { loadStartControlPlane } from './lib/test-helpers.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const flag = (name, fallback) => {
  const index = process.argv.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(process.argv[index + 1]);
};
const N = flag('clusters', 300);
const EXEC_SAMPLE = Math.min(N, flag('exec-sample', 100));
const UPDATES = Math.min(N, flag('updates', 500));
/** Cold starts of the in-process fleet, each on an empty cache: the median and spread are printed. */
const COLD_RUNS = Math.max(1, flag('cold-runs', 3));
/** --memory-limit: the sizes the fleet processes run under (the first for every run), or undefined: no cgroup at all. */
let LIMITS;
if (process.argv.includes('--memory-limit')) {
  try {
    LIMITS = parseMemoryLimits(process.argv[process.argv.indexOf('--memory-limit') + 1], '--memory-limit');
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
}
if (process.argv.includes('--replicas')) {
  // The sharded fleet over several replica processes: a run of its own (bench/fleet-replicas.mjs).
  const { runReplicasBench } = await import('./fleet-replicas.mjs');
  await runReplicasBench({ root, clusters: N, replicas: flag('replicas', 3), flag });
  process.exit(0);
}
const work = mkdtempSync(join(tmpdir(), 'cpc-bench-fleet-'));
const log = (line) => process.stdout.write(`${line}\n`);

const startControlPlane = await loadStartControlPlane(root, 'fleet');
const { createKubeTransport } = await import('../dist/kube/transport.js');
const { loadKubeAccess } = await import('../dist/kube/kubeconfig-loader.js');

const binaries = await ensureControlPlaneBinaries({ log: () => {} });
const controlPlane = await startControlPlane({ binaries, log: () => {} });
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    void controlPlane.stop().finally(() => process.exit(130));
  });
}
log(
  `control plane: ${controlPlane.server} (${Object.values(binaries.versions).join(', ')}); ${N} ClusterProfiles, exec sample ${EXEC_SAMPLE}`,
);
/** The memory cgroup the limited processes' cgroups are made in (LIMITS given and one is writable), else undefined. */
let memoryCgroup;
if (LIMITS?.some((limit) => limit.bytes !== undefined)) {
  const found = findMemoryCgroup();
  if (found.unavailable !== undefined) {
    log(
      `--memory-limit ${LIMITS.map((limit) => limit.label).join(',')}: no writable memory cgroup (${found.unavailable}); every fleet process runs WITHOUT a memory limit`,
    );
  } else {
    memoryCgroup = found;
    log(
      `--memory-limit ${LIMITS.map((limit) => limit.label).join(',')}: each fleet process in a fresh cgroup v${found.version} memory cgroup under ${found.parent}; every run under ${LIMITS[0].label} except the side-by-side cold starts`,
    );
  }
}
/** Runs in a memory cgroup, for the closing line: [what, cgroup stats]. */
const limitedRuns = [];

try {
  const kubectl = (args, input) =>
    execFileSync('kubectl', ['--kubeconfig', controlPlane.adminKubeconfig, ...args], { input, encoding: 'utf8' });
  kubectl(['apply', '-f', join(root, 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml')]);
  kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io']);
  for (const ns of ['bench-fleet', 'bench-sample', 'bench-warm', 'bench-members', 'bench-empty'])
    kubectl(['create', 'namespace', ns]);
  kubectl(['create', 'serviceaccount', 'bench', '-n', 'bench-members']);

  const caPem = readFileSync(controlPlane.caFile, 'utf8');
  const statusOf = (i) =>
    benchProfileStatus(i, { server: controlPlane.server, caPem, accountNamespace: 'bench-members' });
  const admin = await loadKubeAccess({ kubeconfig: controlPlane.adminKubeconfig }, { env: {}, cwd: root });
  const kube = createKubeTransport(admin.endpoint, admin.credential, { timeoutMs: 60_000 });
  const create = (namespace, count, offset) => createBenchProfiles(kube, namespace, count, offset, statusOf);
  const t = performance.now();
  await create('bench-fleet', N, 0);
  log(`created ${N} ClusterProfiles (with status) in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  await create('bench-sample', EXEC_SAMPLE, 1_000_000);
  await create('bench-warm', 1, 2_000_000);
  await kube.close();

  const hubKubeconfig = controlPlane.adminKubeconfig;
  const providers = (inProcess) => {
    const file = join(work, `providers-${inProcess ? 'in-process' : 'exec'}.json`);
    const execConfig = inProcess
      ? { command: 'clusterprofile-token-request', args: ['--bootstrap-kubeconfig', controlPlane.adminKubeconfig] }
      : {
          command: process.execPath,
          args: [
            join(root, 'bin/clusterprofile-token-request.mjs'),
            '--bootstrap-kubeconfig',
            controlPlane.adminKubeconfig,
          ],
        };
    writeFileSync(
      file,
      JSON.stringify({
        providers: [
          {
            name: 'token-request',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              provideClusterInfo: true,
              interactiveMode: 'Never',
              ...execConfig,
            },
          },
        ],
      }),
    );
    return file;
  };
  const run = async (config, limit = LIMITS?.[0]) => {
    const before = controlPlaneCpu();
    const load = loadavg()[0];
    const result = await runOnce(config, limit);
    result.controlPlaneCpu = cpuSince(before, controlPlaneCpu());
    result.loadBefore = load;
    result.loadAfter = loadavg()[0];
    return result;
  };
  const runOnce = (config, limit) =>
    new Promise((resolve, reject) => {
      const profile = process.argv.includes('--cpu-prof')
        ? ['--cpu-prof', `--cpu-prof-dir=${join(work, 'profiles')}`]
        : [];
      const { nodeArgs = [], ...runnerConfig } = config;
      const child = spawnLimited(
        memoryCgroup,
        limit,
        process.execPath,
        ['--expose-gc', ...nodeArgs, ...profile, join(root, 'bench/fleet-runner.mjs'), JSON.stringify(runnerConfig)],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
          env: { ...process.env, NODE_COMPILE_CACHE: join(work, 'compile-cache') },
        },
      );
      let out = '';
      child.stdout.on('data', (chunk) => (out += chunk));
      child.on('close', (code, signal) => {
        const stats = child.cgroupStats;
        if (stats !== undefined)
          limitedRuns.push([`${config.namespace}${config.second ? ' (restart)' : ''} under ${limit.label}`, stats]);
        if (code === 0) {
          resolve({ ...JSON.parse(out.trim().split('\n').pop()), cgroup: stats });
        } else if (stats !== undefined && (stats.oomKills > 0 || signal === 'SIGKILL')) {
          reject(
            Object.assign(
              new Error(
                `the fleet process (${config.namespace}) was killed (${signal ?? code}) under --memory-limit ${limit.label}: ${stats.oomKills} OOM kill(s) in its memory cgroup, peak ${(stats.peak / 2 ** 20).toFixed(1)} MiB of ${formatLimit(stats.limit)}`,
              ),
              { finding: true },
            ),
          );
        } else if (code === 125 && stats !== undefined) {
          reject(
            Object.assign(
              new Error(`the fleet process could not be moved into its memory cgroup ${child.cgroup.dir}`),
              { finding: true },
            ),
          );
        } else {
          reject(new Error(`fleet-runner exited with ${code ?? signal}: ${out}`));
        }
      });
    });
  const cache = (name) => {
    const dir = join(work, `cache-${name}`);
    mkdirSync(dir, { recursive: true });
    return dir;
  };
  const common = { hubKubeconfig, adminKubeconfig: controlPlane.adminKubeconfig, emptyNamespace: 'bench-empty' };

  /** Status-only updates (a condition's lastTransitionTime) on the first `count` profiles of bench-fleet. */
  const patchStatusOnly = async (count) => {
    const transport = createKubeTransport(admin.endpoint, admin.credential, { timeoutMs: 60_000 });
    const stamp = new Date(Date.now() + 7_200_000).toISOString().replace(/\.\d+Z$/, 'Z');
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          const name = `c-${String(next++).padStart(5, '0')}`;
          const response = await transport.send({
            method: 'PATCH',
            path: `/apis/multicluster.x-k8s.io/v1alpha1/namespaces/bench-fleet/clusterprofiles/${name}/status`,
            body: {
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
            },
            contentType: 'application/merge-patch+json',
          });
          if (response.status !== 200) throw new Error(`patch ${name}: HTTP ${response.status}`);
        }
      }),
    );
    await transport.close();
  };

  /** The Go provider on bench-fleet: built (bench/lib/fleet-mcr.mjs), then engaging, then status-only updates. */
  const multiclusterRuntime = async ({ providersFile, patchStatusOnly }) => {
    const built = buildFleetMcr({ root, work });
    if (built.skipped !== undefined) return built;
    const { binary } = built;
    const limitSeconds = Math.max(120, N / 20);
    // Under the same limit as the fleet processes (exec'd from the cgroup's shell: the same PID, for its RSS below).
    const child = spawnLimited(
      memoryCgroup,
      LIMITS?.[0],
      binary,
      [
        '--hub-kubeconfig',
        controlPlane.adminKubeconfig,
        '--namespace',
        'bench-fleet',
        '--providers-file',
        providersFile,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    if (child.cgroup !== undefined)
      child.once('close', () => limitedRuns.push([`multicluster-runtime under ${LIMITS[0].label}`, child.cgroupStats]));
    const closed = new Promise((resolve) => child.once('close', resolve));
    let last = { seconds: 0, engaged: 0, engagements: 0 };
    let buffer = '';
    child.stdout.on('data', (chunk) => {
      buffer += chunk;
      const lines = buffer.split('\n');
      buffer = lines.pop();
      for (const line of lines) if (line.trim() !== '') last = JSON.parse(line);
    });
    let exited;
    child.on('exit', (code, signal) => (exited = `the Go provider exited (${code ?? signal})`));
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const rssOf = () =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    try {
      while (last.engaged < N && last.seconds < limitSeconds && exited === undefined) await sleep(200);
      if (exited !== undefined) return { skipped: exited };
      const engagedSeconds = last.engaged >= N ? last.seconds : undefined;
      const engagedAtLimit = last.engaged;
      await sleep(2_000);
      const rss = rssOf();
      const before = last.engagements;
      const updates = Math.min(UPDATES, 100);
      await patchStatusOnly(updates);
      // Until no engagement for 5 s (reconciles run one at a time), at most the limit.
      const started = performance.now();
      let seen = last.engagements;
      let quietSince = performance.now();
      while (performance.now() - quietSince < 5_000 && (performance.now() - started) / 1000 < limitSeconds) {
        await sleep(250);
        if (last.engagements !== seen) {
          seen = last.engagements;
          quietSince = performance.now();
        }
      }
      return {
        engagedSeconds,
        engagedAtLimit,
        limitSeconds,
        rss,
        updates,
        reengagements: last.engagements - before,
        waitedSeconds: (performance.now() - started) / 1000,
      };
    } finally {
      child.kill('SIGKILL');
      await closed;
    }
  };

  // 1. in-process, cold; then the status-only updates. Further cold starts on fresh caches (each a TokenRequest per
  //    member again) give the spread; the figures below are the first's.
  const SEMI_FLAG = '--max-semi-space-size=16';
  const cold = await run({
    ...common,
    namespace: 'bench-fleet',
    providersFile: providers(true),
    cacheDir: cache('main'),
    inProcess: true,
    updates: UPDATES,
    sampleStatus: statusOf(0),
  });
  const colds = [cold];
  for (let i = 1; i < COLD_RUNS; i += 1) {
    colds.push(
      await run({
        ...common,
        namespace: 'bench-fleet',
        providersFile: providers(true),
        cacheDir: cache(`cold-${i}`),
        inProcess: true,
        updates: 0,
      }),
    );
  }
  // 1b. the same cold start with V8's young generation bounded by the operator (Node 24's default lets it grow to
  //     128 MiB, two semi-spaces of 64 MiB, and the survivors of a 10 000-member cold start fill it).
  const coldSemi = await run({
    ...common,
    namespace: 'bench-fleet',
    providersFile: providers(true),
    cacheDir: cache('cold-semi'),
    inProcess: true,
    updates: 0,
    nodeArgs: [SEMI_FLAG],
  });
  // 1c. --memory-limit's further sizes: the same cold starts, each process under that limit (or none: no cgroup). A
  //     process killed under one of these is that size's row, and the bench goes on.
  const coldsByLimit = LIMITS === undefined ? [] : [[LIMITS[0], colds]];
  for (const limit of LIMITS?.slice(1) ?? []) {
    const runs = [];
    let killed;
    for (let i = 0; i < COLD_RUNS && killed === undefined; i += 1) {
      try {
        runs.push(
          await run(
            {
              ...common,
              namespace: 'bench-fleet',
              providersFile: providers(true),
              cacheDir: cache(`cold-${limit.label}-${i}`),
              inProcess: true,
              updates: 0,
            },
            limit,
          ),
        );
      } catch (error) {
        if (error.finding !== true) throw error;
        killed = error.message;
      }
    }
    coldsByLimit.push([limit, runs, killed]);
  }
  // 2. a restart: the same cache.
  const warm = await run({
    ...common,
    namespace: 'bench-fleet',
    providersFile: providers(true),
    cacheDir: cache('main'),
    inProcess: true,
    updates: 0,
    second: true,
  });
  const warmNoClients = await run({
    ...common,
    namespace: 'bench-fleet',
    providersFile: providers(true),
    cacheDir: cache('main'),
    inProcess: true,
    updates: 0,
    clients: false,
  });
  // 3. one credential per member of the sample: in-process vs exec, each on a cold cache.
  //    Each after a one-member fleet ran (its credential obtained the same way): the modules of the issuance path are
  //    loaded and compiled, as in a running fleet's renewal cycle.
  const sampleIn = await run({
    ...common,
    namespace: 'bench-sample',
    providersFile: providers(true),
    cacheDir: cache('sample-in'),
    inProcess: true,
    updates: 0,
    warmNamespace: 'bench-warm',
  });
  const sampleExec = await run({
    ...common,
    namespace: 'bench-sample',
    providersFile: providers(false),
    cacheDir: cache('sample-exec'),
    inProcess: false,
    updates: 0,
    warmNamespace: 'bench-warm',
  });
  const mcr = await multiclusterRuntime({ providersFile: providers(false), patchStatusOnly });
  const bare = spawnSyncLimited(
    memoryCgroup,
    LIMITS?.[0],
    process.execPath,
    ['-e', 'process.stdout.write(String(process.memoryUsage().rss))'],
    { encoding: 'utf8' },
  );
  if (bare.cgroupStats !== undefined) limitedRuns.push([`node -e 0 under ${LIMITS[0].label}`, bare.cgroupStats]);
  const nodeRss = Number(bare.stdout);

  const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
  const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  const verdict = (ok) => (ok ? 'MET' : 'NOT MET');
  const check = (result, what) => {
    if (result.counts.ready !== result.members)
      log(`  WARNING ${what}: ${result.counts.ready}/${result.members} ready; errors ${result.errors.join(', ')}`);
  };
  check(cold, 'cold');
  check(warm, 'warm');
  check(sampleIn, 'sample in-process');
  check(sampleExec, 'sample exec');

  log('');
  log(`1. ${N} members, in-process credentials, cold cache (${cold.fetches} fetches, ${cold.slots} credentials)`);
  log(
    `   start -> first list applied: ${cold.listedSeconds.toFixed(2)} s; start -> all ready: ${cold.readySeconds.toFixed(2)} s`,
  );
  log(
    `   CPU (fleet process): ${cold.cpuOwnSeconds.toFixed(2)} s = ${((cold.cpuOwnSeconds / N) * 1000).toFixed(2)} ms per member`,
  );
  const split = (result) =>
    `fleet ${result.cpuOwnSeconds.toFixed(1)} s, ${Object.entries(result.controlPlaneCpu)
      .map(([comm, seconds]) => `${comm} ${seconds.toFixed(1)} s`)
      .join(
        ', ',
      )} CPU over ${result.readySeconds.toFixed(1)} s wall x 2 cores; load average ${result.loadBefore.toFixed(1)} -> ${result.loadAfter.toFixed(1)}`;
  const readies = colds.map((result) => result.readySeconds).sort((a, b) => a - b);
  const median =
    readies.length % 2 === 1
      ? readies[(readies.length - 1) / 2]
      : (readies[readies.length / 2 - 1] + readies[readies.length / 2]) / 2;
  log(
    `   ${colds.length} cold starts: start -> all ready median ${median.toFixed(2)} s (${readies[0].toFixed(2)}–${readies.at(-1).toFixed(2)} s)`,
  );
  for (const [index, result] of colds.entries()) {
    const cpu = result.cpuOwnSeconds + Object.values(result.controlPlaneCpu).reduce((sum, seconds) => sum + seconds, 0);
    log(
      `   run ${index + 1}: ${result.readySeconds.toFixed(2)} s; time split: ${split(result)}; CPU in all ${cpu.toFixed(1)} s = ${((cpu / N) * 1000).toFixed(2)} ms per member (on 2 idle cores at least ${(cpu / 2).toFixed(1)} s)`,
    );
  }
  // The RSS target is per member of a 10 000-member fleet: with a few hundred, the process's one-time growth (V8's
  // young generation, malloc arenas, compiled code) spread over few members is most of the figure.
  const rssVerdict = (bytes) => (N >= 10_000 ? verdict(bytes <= 20 * 1024) : `judged at 10 000 members, not at ${N}`);
  const rssPer = (cold.rssAfter - cold.rssBefore) / N;
  const heapPer = (cold.heapAfter - cold.heapBefore) / N;
  log(
    `   RSS: ${mib(cold.rssBefore)} with an empty fleet (every module loaded; node -e 0: ${mib(nodeRss)}) -> ${mib(cold.rssAfter)} with ${N} idle members`,
  );
  log(`   per idle member: ${kib(rssPer)} RSS, ${kib(heapPer)} heap   [target <= 20 KiB RSS: ${rssVerdict(rssPer)}]`);
  // V8 (Node 24) keeps the pages a space grew to in its pool after they are freed, and its memory reducer does not run
  // in an idle process: the RSS above is the cold start's high-water mark of these spaces, at ready and ever after.
  const at = cold.spacesAtReady;
  const was = cold.spacesBefore;
  log(
    `   at ready (${kib((cold.rssAtReady - cold.rssBefore) / N)} RSS per member before any collection): V8 young generation ${mib(was.young)} -> ${mib(at.young)}, old generation ${mib(was.old)} -> ${mib(at.old)} committed (${mib(at.oldUsed)} used; live after a full collection: ${mib(cold.heapAfter)} heap in all)`,
  );
  const semiPer = (coldSemi.rssAfter - coldSemi.rssBefore) / N;
  log(
    `   the same cold start under \`node ${SEMI_FLAG}\` (an operator's flag: by default V8 lets the young generation grow to 128 MiB): ready in ${coldSemi.readySeconds.toFixed(2)} s, CPU ${coldSemi.cpuOwnSeconds.toFixed(2)} s; per idle member ${kib(semiPer)} RSS (young generation at ready ${mib(coldSemi.spacesAtReady.young)})   [target <= 20 KiB RSS: ${rssVerdict(semiPer)}]`,
  );
  if (LIMITS !== undefined) {
    log(
      `   by --memory-limit (each fleet process alone in a memory cgroup with that limit; Node sizes V8's heap from it):`,
    );
    for (const [limit, runs, killed] of coldsByLimit) {
      if (killed !== undefined) {
        log(`   ${limit.label}: FINDING: ${killed}`);
        continue;
      }
      const first = runs[0];
      const times = runs.map((result) => result.readySeconds).sort((a, b) => a - b);
      const mid =
        times.length % 2 === 1
          ? times[(times.length - 1) / 2]
          : (times[times.length / 2 - 1] + times[times.length / 2]) / 2;
      const per = (first.rssAfter - first.rssBefore) / N;
      const seen = `constrainedMemory ${formatLimit(first.constrainedMemory)}, heap_size_limit ${mib(first.heapSizeLimit)}`;
      const where =
        first.cgroup === undefined
          ? 'no memory cgroup'
          : `cgroup peak ${mib(Math.max(...runs.map((result) => result.cgroup.peak)))} of ${formatLimit(first.cgroup.limit)}, OOM kills ${runs.reduce((sum, result) => sum + result.cgroup.oomKills, 0)}`;
      log(
        `   ${limit.label}: V8 saw ${seen}; ready ${runs.length === 1 ? `in ${mid.toFixed(2)} s` : `median ${mid.toFixed(2)} s (${times[0].toFixed(2)}–${times.at(-1).toFixed(2)} s)`} (fleet CPU ${first.cpuOwnSeconds.toFixed(2)} s), load average ${first.loadBefore.toFixed(1)} -> ${first.loadAfter.toFixed(1)}; per idle member ${kib(per)} RSS (${kib((first.rssAtReady - first.rssBefore) / N)} at ready), young generation at ready ${mib(first.spacesAtReady.young)}, old ${mib(first.spacesAtReady.old)} committed; RSS ${mib(first.rssAfter)}; ${where}   [target <= 20 KiB RSS: ${rssVerdict(per)}]`,
      );
    }
  }
  log(
    `2. restart on the warm cache: start -> all ready ${warm.readySeconds.toFixed(2)} s, CPU ${warm.cpuOwnSeconds.toFixed(2)} s`,
  );
  const warmRssPer = (warm.rssAfter - warm.rssBefore) / N;
  log(
    `   per idle member after the restart (no issuance garbage): ${kib(warmRssPer)} RSS, ${kib((warm.heapAfter - warm.heapBefore) / N)} heap   [target <= 20 KiB RSS: ${rssVerdict(warmRssPer)}]`,
  );
  const marginal = warm.marginalRss / N;
  log(
    `   marginal, a second fleet of the same ${N} members in that process: ${kib(marginal)} RSS, ${kib(warm.marginalHeap / N)} heap per member   [target <= 20 KiB RSS: ${rssVerdict(marginal)}]`,
  );
  log(
    `   (V8 heap committed: ${mib(warm.heapTotalBefore)} -> ${mib(warm.heapTotalAfter)}; the RSS above the heap is mostly a one-time growth: V8's young generation, malloc arenas, compiled code)`,
  );
  log(
    `   the same without client-node clients (clients: false): ${kib((warmNoClients.rssAfter - warmNoClients.rssBefore) / N)} RSS, ${kib((warmNoClients.heapAfter - warmNoClients.heapBefore) / N)} heap per member`,
  );
  if (N >= 10_000) {
    log(
      `   [target 10 000 ready <= 30 s: cold ${verdict(median <= 30)} (median ${median.toFixed(1)} s), warm ${verdict(warm.readySeconds <= 30)} (${warm.readySeconds.toFixed(1)} s)]`,
    );
  } else {
    const perMember = colds
      .map(
        (result) =>
          (result.cpuOwnSeconds + Object.values(result.controlPlaneCpu).reduce((sum, seconds) => sum + seconds, 0)) / N,
      )
      .sort((a, b) => a - b);
    const cpuMedian = perMember[Math.floor((perMember.length - 1) / 2)];
    log(
      `   [target 10 000 ready <= 30 s: not measured at ${N} (run with --clusters 10000); the CPU of a cold start at this size, ${(cpuMedian * 1000).toFixed(2)} ms per member in all (median), is ${((cpuMedian * 10_000) / 2).toFixed(1)} s of two idle cores for 10 000 (an upper bound: the run's fixed costs are in it)]`,
    );
  }
  const perIn = sampleIn.cpuOwnSeconds / EXEC_SAMPLE;
  const perExec = (sampleExec.cpuOwnSeconds + sampleExec.cpuChildrenSeconds) / EXEC_SAMPLE;
  log(
    `3. one credential per member, ${EXEC_SAMPLE} members, cold caches (a TokenRequest each: one renewal cycle's work)`,
  );
  log(
    `   in-process: ${(perIn * 1000).toFixed(2)} ms CPU per credential (${sampleIn.cpuOwnSeconds.toFixed(2)} s; ready in ${sampleIn.readySeconds.toFixed(2)} s)`,
  );
  log(
    `   exec'd plugins: ${(perExec * 1000).toFixed(2)} ms CPU per credential (fleet ${sampleExec.cpuOwnSeconds.toFixed(2)} s + plugins ${sampleExec.cpuChildrenSeconds.toFixed(2)} s; ready in ${sampleExec.readySeconds.toFixed(2)} s)`,
  );
  log(
    `   a renewal cycle of ${N}: in-process ${(perIn * N).toFixed(2)} CPU s, exec ${(perExec * N).toFixed(2)} CPU s; exec / in-process = ${(perExec / perIn).toFixed(1)}x   [target >= 20x: ${verdict(perExec / perIn >= 20)}]`,
  );
  log(
    `4. status-only updates on ${cold.statusOnlyUpdates} members: ${cold.rebuildsAfterStatusOnly} client rebuilds, ${cold.updatedEventsAfterStatusOnly} updated events   [target 0: ${verdict(cold.rebuildsAfterStatusOnly === 0 && cold.updatedEventsAfterStatusOnly === 0)}]`,
  );
  log(`   (then one access change: ${cold.rebuildsAfterOneAccessChange} rebuild)`);
  if (mcr.skipped !== undefined) {
    log(`5. multicluster-runtime's cluster-inventory-api provider side by side: not measured (${mcr.skipped})`);
  } else {
    log(
      `5. multicluster-runtime v0.24.1 cluster-inventory-api provider on the same ${N} profiles (bench/fleet-mcr; engaging needs no credential there)`,
    );
    log(
      `   start -> all engaged: ${mcr.engagedSeconds === undefined ? `not within ${mcr.limitSeconds} s (${mcr.engagedAtLimit}/${N})` : `${mcr.engagedSeconds.toFixed(2)} s`}; RSS ${mib(mcr.rss)} (${kib(mcr.rss / N)} per member, the whole process)`,
    );
    log(
      `   status-only updates on ${mcr.updates} members: ${mcr.reengagements} re-engagements (new cluster + cache) within ${mcr.waitedSeconds.toFixed(0)} s   [ours: ${cold.rebuildsAfterStatusOnly}]`,
    );
  }
  if (limitedRuns.length > 0) {
    // A cgroup's charge is the process's memory plus the page cache it read; OOM kills are the kernel's, in that cgroup.
    const highest = (entries) =>
      entries.reduce((best, entry) => (entry[1].peak / entry[1].limit > best[1].peak / best[1].limit ? entry : best));
    const fleets = limitedRuns.filter(([what]) => what.startsWith('bench-'));
    const others = limitedRuns.filter(([what]) => !what.startsWith('bench-'));
    const charge = ([what, stats]) => `${mib(stats.peak)} of ${formatLimit(stats.limit)} (${what})`;
    log(
      `memory cgroups: ${limitedRuns.length} processes; highest charge of a fleet process ${fleets.length === 0 ? 'none' : charge(highest(fleets))}${others.length === 0 ? '' : `, of the others ${charge(highest(others))}`}; OOM kills ${limitedRuns.reduce((sum, [, stats]) => sum + stats.oomKills, 0)}`,
    );
  }
} catch (error) {
  // A fleet process killed under --memory-limit is a finding of the run, said in one line.
  if (error.finding !== true) throw error;
  log(`FINDING: ${error.message}`);
  process.exitCode = 1;
} finally {
  await controlPlane.stop();
  if (process.argv.includes('--keep')) log(`work directory kept: ${work}`);
  else rmSync(work, { recursive: true, force: true });
}
