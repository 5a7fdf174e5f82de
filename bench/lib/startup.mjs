// Start-up wall time of commands side by side: every command runs once per round, rounds interleaved, so a noisy
// shared machine disturbs all of them alike. Prints each command's wall time as median (min–max), the children's
// mean CPU time (Linux /proc/self/stat cutime + cstime: far less sensitive to load than wall time), the per-round
// ratio of each command to the baseline (the first command) as median (min–max), the load average, and whether the
// subject's ratio meets its target (it reports, it does not fail the run).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { formatSummary, loadText, quantile, summary, verdict } from './report.mjs';

export { quantile };

const TICK_MS = 10;

function childCpuTicks() {
  if (!existsSync('/proc/self/stat')) return undefined;
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(fields[13]) + Number(fields[14]);
}

/**
 * @param {object} o
 * @param {string} o.title
 * @param {Record<string, [string, string[], Record<string, string>?]>} o.commands  name -> [command, args, extra env]; the first is the baseline
 * @param {Record<string, string>} o.env
 * @param {number} o.runs     rounds
 * @param {string} o.subject  the command whose ratio is judged against `target`
 * @param {number} o.target   e.g. 1.2: the subject's median per-round wall-time ratio to the baseline must not exceed it
 * @param {string} [o.what]   how the verdict names the subject (default: `${subject} wall / ${baseline} wall`)
 * @param {(name: string, result: import('node:child_process').SpawnSyncReturns<string>) => void} [o.check]
 *   throws if a run's output is not what a measured run must produce (e.g. not the cached credential)
 * @returns {{ ratio: { median: number, min: number, max: number }, met: boolean, wall: Record<string, number[]> }}
 */
export function compareStartup({ title, commands, env, runs, subject, target, what, check }) {
  const loadBefore = loadText();
  const cpuTicks = {};
  const once = ([command, args, extra = {}], name, measured) => {
    const ticks = childCpuTicks();
    const start = process.hrtime.bigint();
    const result = spawnSync(command, args, { env: { ...env, ...extra }, encoding: 'utf8' });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0)
      throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal}): ${result.stderr}`);
    check?.(name, result);
    if (measured && ticks !== undefined) cpuTicks[name] = (cpuTicks[name] ?? 0) + childCpuTicks() - ticks;
    return ms;
  };
  // Warm-up: the credential cache (the first run issues), the compile cache, the page cache.
  for (const [name, command] of Object.entries(commands)) for (let i = 0; i < 3; i++) once(command, name, false);
  const samples = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, command] of Object.entries(commands)) samples[name].push(once(command, name, true));
  }
  const [baselineName] = Object.keys(commands);
  const cpuMean = (name) => (cpuTicks[name] === undefined ? undefined : (cpuTicks[name] * TICK_MS) / runs);
  const perRound = (name) => samples[name].map((ms, i) => ms / samples[baselineName][i]);
  const width = Math.max(...Object.keys(commands).map((name) => name.length)) + 2;
  console.log(`${title} (${runs} interleaved rounds, node ${process.version}, ${process.arch})`);
  console.log(
    `  ${'command'.padEnd(width)}${'wall ms median (min–max)'.padEnd(28)}${'cpu ms mean'.padEnd(20)}ratio to ${baselineName} per round, median (min–max)`,
  );
  for (const [name, values] of Object.entries(samples)) {
    const cpu = cpuMean(name);
    const cpuText = cpu === undefined ? 'n/a' : `${cpu.toFixed(1)} (${(cpu / cpuMean(baselineName)).toFixed(2)}x)`;
    const ratioText = name === baselineName ? '' : formatSummary(summary(perRound(name)), 2, 'x');
    console.log(`  ${name.padEnd(width)}${formatSummary(summary(values)).padEnd(28)}${cpuText.padEnd(20)}${ratioText}`);
  }
  const ratio = summary(perRound(subject));
  const ratioOfMedians = quantile(samples[subject], 0.5) / quantile(samples[baselineName], 0.5);
  console.log(`  load average: before ${loadBefore}; after ${loadText()}`);
  const met = verdict(
    ratio.median <= target,
    what ?? `${subject} wall / ${baselineName} wall`,
    `${formatSummary(ratio, 2, 'x')} per round (ratio of medians ${ratioOfMedians.toFixed(2)}x), load ${loadText()}`,
    `<= ${target.toFixed(2)}x`,
  );
  return { ratio, met, wall: samples };
}
