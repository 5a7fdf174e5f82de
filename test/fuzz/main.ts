/**
 * `npm run fuzz`: the differential fuzz targets for as long as asked (scripts/fuzz.mjs bundles and runs this file).
 *
 *   npm run fuzz -- --duration 60s [--target http1|der|kubeconfig] [--seed N] [--out DIR] [--keep-going]
 *
 * Prints cases per second per target; a disagreement is shrunk and written under .cache/fuzz/ (or --out DIR), and
 * the command exits 1 (after the first disagreement of a target, or at the
 * end with --keep-going). The seed is printed first; CPC_FUZZ_SEED or --seed replays a run.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { derTarget } from './der-target.js';
import { http1Target } from './http1-target.js';
import { kubeconfigTarget } from './kubeconfig-target.js';
import { DEFAULT_FUZZ_OUT, describeFailures, type FuzzTarget, fuzzSeed, runFuzz } from './runner.js';

const TARGETS: Record<string, () => Promise<FuzzTarget<never>>> = {
  http1: async () => http1Target() as FuzzTarget<never>,
  der: async () => derTarget() as FuzzTarget<never>,
  kubeconfig: async () => (await kubeconfigTarget()) as FuzzTarget<never>,
};

function durationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  if (match === null) throw new TypeError(`--duration ${text}: expected e.g. 500ms, 30s or 5m`);
  return Number(match[1]) * { ms: 1, s: 1000, m: 60_000 }[match[2] ?? 's']!;
}

export async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: 'string', default: '30s' },
      target: { type: 'string', multiple: true },
      seed: { type: 'string' },
      out: { type: 'string' },
      'keep-going': { type: 'boolean', default: false },
    },
  });
  const names = values.target ?? Object.keys(TARGETS);
  for (const name of names) {
    if (TARGETS[name] === undefined) throw new TypeError(`--target ${name}: one of ${Object.keys(TARGETS).join(', ')}`);
  }
  const seed = fuzzSeed(values.seed === undefined ? process.env : { CPC_FUZZ_SEED: values.seed });
  const perTarget = durationMs(values.duration);
  const outDir = path.resolve(values.out ?? DEFAULT_FUZZ_OUT);
  process.stdout.write(`seed ${seed} (CPC_FUZZ_SEED=${seed} replays it); ${values.duration} per target\n`);
  let failed = false;
  for (const name of names) {
    const target = await TARGETS[name]!();
    const result = await runFuzz(target, { seed, durationMs: perTarget, outDir, stopAtFirst: !values['keep-going'] });
    const rate = result.cases / (result.elapsedMs / 1000);
    process.stdout.write(
      `${name}: ${result.cases} cases in ${(result.elapsedMs / 1000).toFixed(1)} s, ${rate.toFixed(0)} cases/s, ` +
        `${result.failures.length === 0 ? 'no disagreement' : 'DISAGREEMENT'}${result.summary === undefined ? '' : ` (${result.summary})`}\n`,
    );
    if (result.failures.length > 0) {
      failed = true;
      process.stdout.write(`${describeFailures(result)}\n`);
    }
  }
  return failed ? 1 : 0;
}
