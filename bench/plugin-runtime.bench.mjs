// Cache-hit wall time of a plugin binary against `node -e 0`, side by side.
//
// The fixture provider (test/fixtures/runtime) is bundled exactly like the real plugins (esbuild, dynamic imports
// split off) with a bin stub that turns on the compile cache. After one warm-up run fills the credential cache,
// the two commands run interleaved N times each; medians, p90 and the ratio are printed. Target: ratio <= 1.3.
//
//   npm exec -- node bench/plugin-runtime.bench.mjs [runs]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFixture } from '../test/fixtures/runtime/build.mjs';

const runs = Number(process.argv[2] ?? 40);
const work = mkdtempSync(join(tmpdir(), 'cpc-bench-runtime-'));
const stub = await buildFixture(work);
const execInfo = JSON.stringify({
  kind: 'ExecCredential',
  apiVersion: 'client.authentication.k8s.io/v1',
  spec: { interactive: false, cluster: { server: 'https://cluster.example:6443', config: { issuerURL: 'https://issuer.example' } } },
});
const env = { PATH: process.env.PATH, HOME: process.env.HOME, KUBERNETES_EXEC_INFO: execInfo, NODE_COMPILE_CACHE: join(work, 'compile-cache') };

const commands = {
  'node -e 0': [process.execPath, ['-e', '0']],
  'plugin (cache hit)': [process.execPath, [stub, '--subject', 'alice', '--cache-dir', join(work, 'cache')]],
  'plugin, no compile cache': [process.execPath, [stub, '--subject', 'alice', '--cache-dir', join(work, 'cache')], { NODE_DISABLE_COMPILE_CACHE: '1' }],
};

// CPU time of waited-for children (Linux: /proc/self/stat cutime + cstime, in clock ticks of 10 ms). Summed over
// all runs it gives a mean that a busy machine disturbs far less than wall time.
const TICK_MS = 10;
function childCpuTicks() {
  if (!existsSync('/proc/self/stat')) return undefined;
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(fields[13]) + Number(fields[14]);
}
const cpuTicks = {};

function once([command, args, extra = {}], name) {
  const ticks = childCpuTicks();
  const start = process.hrtime.bigint();
  const result = spawnSync(command, args, { env: { ...env, ...extra }, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
  if (name !== undefined && ticks !== undefined) cpuTicks[name] = (cpuTicks[name] ?? 0) + childCpuTicks() - ticks;
  return ms;
}

// Warm-up: fills the credential cache (the first run issues) and the compile cache; warms the page cache.
for (const command of Object.values(commands)) for (let i = 0; i < 3; i++) once(command);
const hit = spawnSync(process.execPath, commands['plugin (cache hit)'][1], { env, encoding: 'utf8' });
if (!hit.stdout.includes('"kind":"ExecCredential"') || hit.stderr !== '') throw new Error(`not a clean cache hit: ${hit.stderr}`);

const samples = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
for (let i = 0; i < runs; i++) {
  for (const [name, command] of Object.entries(commands)) samples[name].push(once(command, name));
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const baseline = quantile(samples['node -e 0'], 0.5);
const cpuMean = (name) => (cpuTicks[name] === undefined ? undefined : (cpuTicks[name] * TICK_MS) / runs);
console.log(`plugin runtime cache hit vs node -e 0 (${runs} interleaved runs each, node ${process.version}, ${process.arch})`);
for (const [name, values] of Object.entries(samples)) {
  const median = quantile(values, 0.5);
  const cpu = cpuMean(name);
  const cpuText = cpu === undefined ? '' : `   cpu mean ${cpu.toFixed(1).padStart(6)} ms (${(cpu / cpuMean('node -e 0')).toFixed(2)}x)`;
  console.log(`  ${name.padEnd(26)} wall median ${median.toFixed(1).padStart(6)} ms   p90 ${quantile(values, 0.9).toFixed(1).padStart(6)} ms   ratio ${(median / baseline).toFixed(2)}x${cpuText}`);
}
const ratio = quantile(samples['plugin (cache hit)'], 0.5) / baseline;
console.log(`cache-hit wall-time ratio ${ratio.toFixed(2)}x (target <= 1.30x): ${ratio <= 1.3 ? 'met' : 'NOT met'}`);
console.log(`load average while measuring: ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')} on ${(await import('node:os')).availableParallelism()} CPUs`);
