// What every bench prints the same way: a sample as median with min–max, the load average, and a target verdict.
// The benches report; they do not gate: a missed target is printed as NOT MET and the run still succeeds.
import { availableParallelism, loadavg } from 'node:os';

/**
 * The plugin targets, each relative to what the same run measures side by side (an absolute figure depends on the
 * host: on a slower one a bare node:https request alone was above the old absolute miss targets):
 *   - cache hit: median per-round wall ratio to `node -e 0` <= hitRatio;
 *   - cache miss: median per-round wall ratio to the bare node:https floor (bench/lib/https-floor.mjs) <= missWallRatio;
 *   - cache miss peak RSS: median <= the floor's median + missRssAboveFloorMiB.
 */
export const PLUGIN_TARGETS = { hitRatio: 1.2, missWallRatio: 1.3, missRssAboveFloorMiB: 3 };

export const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};

/** @param {number[]} values */
export function summary(values) {
  return { median: quantile(values, 0.5), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/** "38.2 (35.0–61.3)" with `digits` decimals and an optional unit after the bracket. */
export function formatSummary({ median, min, max }, digits = 1, unit = '') {
  return `${median.toFixed(digits)} (${min.toFixed(digits)}–${max.toFixed(digits)})${unit}`;
}

/** "4.1 3.0 1.2 on 2 CPUs" */
export function loadText() {
  return `${loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')} on ${availableParallelism()} CPUs`;
}

/**
 * Prints `TARGET MET|NOT MET  <what>: <measured>  (target <target>)` and returns whether it was met.
 * @param {boolean} met
 * @param {string} what
 * @param {string} measured
 * @param {string} target
 */
export function verdict(met, what, measured, target) {
  console.log(`  TARGET ${met ? 'MET    ' : 'NOT MET'}  ${what}: ${measured}  (target ${target})`);
  return met;
}
