/**
 * Runs a differential fuzz target: cases from a seeded generator (`random.ts`), each checked against the reference
 * implementation; a disagreement is shrunk to a small input that still disagrees and written to a file. The same
 * runner serves `npm test` (a fixed number of cases) and `npm run fuzz` (for a duration).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { caseSeed, Random } from './random.js';

/** One target's session: what it generates, how it compares, how it shrinks, how it is written down. */
export interface FuzzSession<Input> {
  generate(random: Random): Input;
  /** Undefined when ours and the reference agree (or differ as the docs list); else what differs. */
  check(input: Input): Promise<string | undefined>;
  /** Smaller inputs to try while minimizing, most promising first. */
  shrink(input: Input): Iterable<Input>;
  /** The input as the file a failure leaves behind, and that file's extension. */
  serialize(input: Input): { bytes: Buffer | string; extension: string };
  /** What the cases so far came to (both read, both refused, refused as listed...), for the run's report. */
  summary?(): string;
  close(): Promise<void>;
}

export interface FuzzTarget<Input = unknown> {
  name: string;
  /** Cases checked at once (default 1): more for targets that mostly wait on sockets or child processes. */
  concurrency?: number;
  open(): Promise<FuzzSession<Input>>;
}

export interface FuzzFailure {
  seed: number;
  index: number;
  reason: string;
  file: string;
}

export interface FuzzResult {
  target: string;
  seed: number;
  cases: number;
  elapsedMs: number;
  failures: FuzzFailure[];
  summary: string | undefined;
}

export interface FuzzRunOptions {
  seed: number;
  /** Stop after this many cases... */
  cases?: number;
  /** ...or after this long (ms), whichever comes first. */
  durationMs?: number;
  /** Stop at the first failure (the default). */
  stopAtFirst?: boolean;
  /** Where minimized inputs go; default `.cache/fuzz` in the checkout (git-ignored). */
  outDir?: string;
}

/** The seed `npm test` runs the targets with unless CPC_FUZZ_SEED says otherwise. */
export const TEST_SEED = 20_261_203;

export const DEFAULT_FUZZ_OUT = path.resolve(import.meta.dirname, '../../.cache/fuzz');

/**
 * The seed from `CPC_FUZZ_SEED` when set, else `fallback` (the tests' fixed seed: `npm test` checks the same cases on
 * every run), else a fresh one (`npm run fuzz`, which prints it).
 */
export function fuzzSeed(env: NodeJS.ProcessEnv = process.env, fallback?: number): number {
  const given = env.CPC_FUZZ_SEED;
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffff_ffff) throw new TypeError(`CPC_FUZZ_SEED=${given}`);
    return seed;
  }
  return fallback ?? Math.floor(Math.random() * 0x1_0000_0000);
}

/** Greedy shrinking: take the first smaller input that still disagrees, until none does (bounded in steps). */
async function minimize<Input>(session: FuzzSession<Input>, input: Input, reason: string, maxSteps = 400) {
  let current = { input, reason };
  let steps = 0;
  for (let progress = true; progress && steps < maxSteps; ) {
    progress = false;
    for (const candidate of session.shrink(current.input)) {
      if (++steps > maxSteps) break;
      const candidateReason = await session.check(candidate).catch((error: unknown) => `check threw: ${error}`);
      if (candidateReason !== undefined) {
        current = { input: candidate, reason: candidateReason };
        progress = true;
        break;
      }
    }
  }
  return current;
}

export async function runFuzz<Input>(target: FuzzTarget<Input>, options: FuzzRunOptions): Promise<FuzzResult> {
  const session = await target.open();
  const failures: FuzzFailure[] = [];
  const started = performance.now();
  const stopAt = options.durationMs === undefined ? Number.POSITIVE_INFINITY : started + options.durationMs;
  const limit = options.cases ?? Number.POSITIVE_INFINITY;
  const concurrency = target.concurrency ?? 1;
  let index = 0;
  try {
    while (index < limit && performance.now() < stopAt) {
      const batch = Array.from({ length: Math.min(concurrency, limit - index) }, (_, offset) => index + offset);
      index += batch.length;
      const checked = await Promise.all(
        batch.map(async (caseIndex) => {
          const input = session.generate(new Random(caseSeed(options.seed, caseIndex)));
          const reason = await session.check(input).catch((error: unknown) => `check threw: ${error}`);
          return { caseIndex, input, reason };
        }),
      );
      for (const { caseIndex, input, reason } of checked) {
        if (reason === undefined) continue;
        const small = await minimize(session, input, reason);
        const outDir = options.outDir ?? DEFAULT_FUZZ_OUT;
        const { bytes, extension } = session.serialize(small.input);
        const file = path.join(outDir, `${target.name}-${options.seed}-${caseIndex}.${extension}`);
        await mkdir(outDir, { recursive: true });
        await writeFile(file, bytes);
        await writeFile(`${file}.txt`, `seed ${options.seed} case ${caseIndex}\n${small.reason}\n`);
        failures.push({ seed: options.seed, index: caseIndex, reason: small.reason, file });
      }
      if (failures.length > 0 && options.stopAtFirst !== false) break;
    }
  } finally {
    await session.close();
  }
  const elapsedMs = performance.now() - started;
  return { target: target.name, seed: options.seed, cases: index, elapsedMs, failures, summary: session.summary?.() };
}

/** A failure as a test or the command reports it: the seed to replay it and the file holding the minimized input. */
export function describeFailures(result: FuzzResult): string {
  return result.failures
    .map(
      (failure) =>
        `${result.target}: case ${failure.index} of seed ${failure.seed} (replay: CPC_FUZZ_SEED=${failure.seed}) ` +
        `disagrees: ${failure.reason}\n  minimized input: ${failure.file}`,
    )
    .join('\n');
}

/** Counts of named outcomes (`both read`, `both refuse`, a listed refusal...), for {@link FuzzSession.summary}. */
export class Tally {
  readonly #counts = new Map<string, number>();

  add(outcome: string): void {
    this.#counts.set(outcome, (this.#counts.get(outcome) ?? 0) + 1);
  }

  toString(): string {
    return [...this.#counts].map(([outcome, count]) => `${count} ${outcome}`).join(', ');
  }
}
