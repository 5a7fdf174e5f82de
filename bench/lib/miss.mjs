// Cache misses side by side, for commands that talk to a server living in this process's event loop (so every
// child is spawned asynchronously). Each round runs every command twice, interleaved, the starting command rotating
// from round to round:
//   - a bare run: wall time (hrtime around spawn -> close) and the child's CPU time (user + sys: the delta of this
//     process's cutime + cstime in /proc/self/stat; only one child runs at a time. Per run it is rounded to 10 ms
//     ticks, but the ticks come from a cumulative nanosecond count, so the mean over the rounds is exact);
//   - a run under `/usr/bin/time -f %M` for the child's peak RSS (wait4's ru_maxrss of that one child).
// A command is a function of the run number returning [command, args, extra env], so each run can get fresh state
// (an empty cache directory: a true miss).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatSummary, loadText, PLUGIN_TARGETS, summary, verdict } from './report.mjs';

export const TIME_BIN = '/usr/bin/time';
const TICK_MS = 10;

function childCpuTicks() {
  if (!existsSync('/proc/self/stat')) return undefined;
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(fields[13]) + Number(fields[14]);
}

function runAsync(command, args, env) {
  return new Promise((resolve, reject) => {
    const start = process.hrtime.bigint();
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, ms: Number(process.hrtime.bigint() - start) / 1e6 }),
    );
  });
}

/**
 * @param {object} o
 * @param {string} o.title
 * @param {Record<string, (run: number) => [string, string[], Record<string, string>?]>} o.commands
 * @param {Record<string, string>} o.env
 * @param {number} o.rounds
 * @param {string} o.work  a scratch directory (for /usr/bin/time's output)
 * @param {number} [o.warmup]  unmeasured runs of each command first (JIT of the server, page cache, compile cache)
 * @param {(name: string, stdout: string) => void} [o.check]  throws if a run did not produce a credential
 * @returns {Promise<Record<string, { wall: ReturnType<typeof summary>, cpu?: ReturnType<typeof summary> & { mean: number }, rss?: ReturnType<typeof summary>, samples: { wall: number[], rss: number[] } }>>}
 *   `rss` is missing when /usr/bin/time is not installed; `samples` are per round, in round order.
 */
export async function compareMisses({ title, commands, env, rounds, work, warmup = 2, check }) {
  const haveTime = existsSync(TIME_BIN);
  const names = Object.keys(commands);
  const wall = Object.fromEntries(names.map((n) => [n, []]));
  const cpu = Object.fromEntries(names.map((n) => [n, []]));
  const rss = Object.fromEntries(names.map((n) => [n, []]));
  let runNumber = 0;
  const once = async (name, timed) => {
    const [command, args, extra = {}] = commands[name](runNumber++);
    const runEnv = { ...env, ...extra };
    if (timed) {
      const out = join(work, `time-${runNumber}.txt`);
      const result = await runAsync(TIME_BIN, ['-f', '%M', '-o', out, command, ...args], runEnv);
      if (result.code !== 0)
        throw new Error(
          `${name} (${command} ${args.join(' ')}) failed (${result.code ?? result.signal}): ${result.stderr}`,
        );
      check?.(name, result.stdout);
      const kib = Number(readFileSync(out, 'utf8').trim().split('\n').at(-1));
      rmSync(out, { force: true });
      if (!Number.isFinite(kib)) throw new Error(`${TIME_BIN} printed no peak RSS for ${name}`);
      return kib / 1024;
    }
    const ticks = childCpuTicks();
    const result = await runAsync(command, args, runEnv);
    if (result.code !== 0)
      throw new Error(
        `${name} (${command} ${args.join(' ')}) failed (${result.code ?? result.signal}): ${result.stderr}`,
      );
    check?.(name, result.stdout);
    return { ms: result.ms, cpuMs: ticks === undefined ? undefined : (childCpuTicks() - ticks) * TICK_MS };
  };

  const loadBefore = loadText();
  for (const name of names) for (let i = 0; i < warmup; i++) await once(name, false);
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]);
    for (const name of order) {
      const { ms, cpuMs } = await once(name, false);
      wall[name].push(ms);
      if (cpuMs !== undefined) cpu[name].push(cpuMs);
    }
    if (haveTime) for (const name of order) rss[name].push(await once(name, true));
  }

  const results = {};
  const width = Math.max(...names.map((n) => n.length)) + 2;
  console.log(`${title} (${rounds} interleaved rounds, node ${process.version})`);
  console.log(
    `  ${'command'.padEnd(width)}${'wall ms median (min–max)'.padEnd(28)}${'cpu ms median (min–max), mean'.padEnd(34)}peak RSS MiB median (min–max)`,
  );
  for (const name of names) {
    const cpuStats =
      cpu[name].length > 0
        ? { ...summary(cpu[name]), mean: cpu[name].reduce((a, b) => a + b, 0) / cpu[name].length }
        : undefined;
    const rssStats = rss[name].length > 0 ? summary(rss[name]) : undefined;
    results[name] = {
      wall: summary(wall[name]),
      cpu: cpuStats,
      rss: rssStats,
      samples: { wall: wall[name], rss: rss[name] },
    };
    const cpuText = cpuStats === undefined ? 'n/a' : `${formatSummary(cpuStats, 0)}, ${cpuStats.mean.toFixed(1)}`;
    const rssText = rssStats === undefined ? `n/a (${TIME_BIN} not installed)` : formatSummary(rssStats);
    console.log(
      `  ${name.padEnd(width)}${formatSummary(results[name].wall).padEnd(28)}${cpuText.padEnd(34)}${rssText}`,
    );
  }
  console.log(`  load average: before ${loadBefore}; after ${loadText()}`);
  return results;
}

/**
 * `CPC_BENCH_BASELINE=<dir>`: the root of another build (a checkout, or a copy of its bin/, dist/ and package.json with
 * node_modules beside them) whose plugin the plugin benches run beside this one, in the same interleaved rounds, as
 * "<name> (baseline)": a before/after comparison that the machine's load affects alike.
 */
export const BASELINE_ROOT =
  process.env.CPC_BENCH_BASELINE === undefined || process.env.CPC_BENCH_BASELINE === ''
    ? undefined
    : process.env.CPC_BENCH_BASELINE;

const FLOOR_SCRIPT = fileURLToPath(new URL('./https-floor.mjs', import.meta.url));

/** The name under which the benches run {@link floorCommand}. */
export const FLOOR_NAME = 'floor: bare node:https';

/**
 * A compareMisses command for the floor of a miss (bench/lib/https-floor.mjs): `requests` ({ url, method?, headers?,
 * body? }) sent over one keep-alive TLS connection trusting `caFile`, from a bare Node.js script.
 */
export function floorCommand(caFile, requests) {
  return () => [process.execPath, [FLOOR_SCRIPT, JSON.stringify({ ca: caFile, requests })]];
}

/** The median of per-round ratios a[i] / b[i] (the two ran in the same round, side by side). */
function roundRatio(a, b) {
  return summary(a.map((value, i) => value / b[i]));
}

/**
 * Prints the two cache-miss verdicts for one command's results against `floor` (the {@link floorCommand} results of
 * the same run): wall, as the median of the per-round ratios to the floor (<= PLUGIN_TARGETS.missWallRatio), and peak
 * RSS, as the median above the floor's median (<= PLUGIN_TARGETS.missRssAboveFloorMiB).
 * @returns {{ met: boolean, measured: boolean }}  measured is false when the peak RSS could not be measured
 */
export function judgeMiss(what, result, floor) {
  const load = loadText();
  const ratio = roundRatio(result.samples.wall, floor.samples.wall);
  const cpu =
    result.cpu === undefined || floor.cpu === undefined
      ? ''
      : `, CPU ${result.cpu.mean.toFixed(1)} vs ${floor.cpu.mean.toFixed(1)} ms (mean)`;
  console.log(
    `  ${what} vs its floor (bare node:https, the same requests, same run): wall ${result.wall.median.toFixed(1)} vs ${floor.wall.median.toFixed(1)} ms${cpu}`,
  );
  const wallMet = verdict(
    ratio.median <= PLUGIN_TARGETS.missWallRatio,
    `${what} wall / floor wall`,
    `${formatSummary(ratio, 2, 'x')} per round (miss ${formatSummary(result.wall, 1, ' ms')}, floor ${formatSummary(floor.wall, 1, ' ms')}), load ${load}`,
    `<= ${PLUGIN_TARGETS.missWallRatio.toFixed(2)}x`,
  );
  if (result.rss === undefined || floor.rss === undefined) {
    console.log(
      `  TARGET NOT MEASURED  ${what} peak RSS: ${TIME_BIN} is not installed  (target <= floor + ${PLUGIN_TARGETS.missRssAboveFloorMiB} MiB)`,
    );
    return { met: false, measured: false };
  }
  const above = result.rss.median - floor.rss.median;
  const rssMet = verdict(
    above <= PLUGIN_TARGETS.missRssAboveFloorMiB,
    `${what} peak RSS - floor peak RSS`,
    `${above >= 0 ? '+' : ''}${above.toFixed(1)} MiB (miss ${formatSummary(result.rss, 1, ' MiB')}, floor ${formatSummary(floor.rss, 1, ' MiB')}; ${(result.rss.median / floor.rss.median).toFixed(2)}x), load ${load}`,
    `<= floor + ${PLUGIN_TARGETS.missRssAboveFloorMiB} MiB`,
  );
  return { met: wallMet && rssMet, measured: true };
}
