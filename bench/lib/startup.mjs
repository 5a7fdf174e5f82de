// Start-up wall time of commands side by side: every command runs once per round, rounds interleaved, so a noisy
// shared machine disturbs all of them alike. Prints medians, p90, the ratio to the baseline and the children's
// mean CPU time (Linux /proc/self/stat cutime + cstime: far less sensitive to load than wall time).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

const TICK_MS = 10;

function childCpuTicks() {
  if (!existsSync('/proc/self/stat')) return undefined;
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return Number(fields[13]) + Number(fields[14]);
}

export const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/**
 * @param {object} o
 * @param {string} o.title
 * @param {Record<string, [string, string[], Record<string, string>?]>} o.commands  name -> [command, args, extra env]; the first is the baseline
 * @param {Record<string, string>} o.env
 * @param {number} o.runs
 * @param {string} o.subject  the command whose ratio is judged against `target`
 * @param {number} o.target   e.g. 1.3
 * @returns {number} the subject's wall-time ratio of medians
 */
export function compareStartup({ title, commands, env, runs, subject, target }) {
  const cpuTicks = {};
  const once = ([command, args, extra = {}], name) => {
    const ticks = childCpuTicks();
    const start = process.hrtime.bigint();
    const result = spawnSync(command, args, { env: { ...env, ...extra }, encoding: 'utf8' });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
    if (name !== undefined && ticks !== undefined) cpuTicks[name] = (cpuTicks[name] ?? 0) + childCpuTicks() - ticks;
    return ms;
  };
  // Warm-up: the credential cache (the first run issues), the compile cache, the page cache.
  for (const command of Object.values(commands)) for (let i = 0; i < 3; i++) once(command);
  const samples = Object.fromEntries(Object.keys(commands).map((name) => [name, []]));
  for (let i = 0; i < runs; i++) {
    for (const [name, command] of Object.entries(commands)) samples[name].push(once(command, name));
  }
  const [baselineName] = Object.keys(commands);
  const baseline = quantile(samples[baselineName], 0.5);
  const cpuMean = (name) => (cpuTicks[name] === undefined ? undefined : (cpuTicks[name] * TICK_MS) / runs);
  console.log(`${title} (${runs} interleaved runs each, node ${process.version}, ${process.arch})`);
  for (const [name, values] of Object.entries(samples)) {
    const median = quantile(values, 0.5);
    const cpu = cpuMean(name);
    const cpuText = cpu === undefined ? '' : `   cpu mean ${cpu.toFixed(1).padStart(6)} ms (${(cpu / cpuMean(baselineName)).toFixed(2)}x)`;
    console.log(`  ${name.padEnd(30)} wall median ${median.toFixed(1).padStart(6)} ms   p90 ${quantile(values, 0.9).toFixed(1).padStart(6)} ms   ratio ${(median / baseline).toFixed(2)}x${cpuText}`);
  }
  const ratio = quantile(samples[subject], 0.5) / baseline;
  console.log(`${subject}: wall-time ratio ${ratio.toFixed(2)}x (target <= ${target.toFixed(2)}x): ${ratio <= target ? 'met' : 'NOT met'}`);
  console.log(`load average while measuring: ${loadavg().map((x) => x.toFixed(1)).join(' ')} on ${availableParallelism()} CPUs`);
  return ratio;
}
