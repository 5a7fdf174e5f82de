// Differential fuzz test of the HTTP/1.1 answer reader (test/fuzz/http1-target.ts): seeded answers from a raw socket,
// read by our seam and by node:http (llhttp). Seed: CPC_FUZZ_SEED (else a fixed one; printed on failure), cases: CPC_FUZZ_CASES.
// The long run is `npm run fuzz -- --target http1 --duration 60s`.
import { expect, it } from 'vitest';
import { http1Target } from '../fuzz/http1-target.js';
import { describeFailures, fuzzSeed, runFuzz, TEST_SEED } from '../fuzz/runner.js';

it('our answer reader and llhttp read every generated answer alike, or we refuse it for a documented reason', async () => {
  const seed = fuzzSeed(process.env, TEST_SEED);
  const result = await runFuzz(http1Target(), { seed, cases: Number(process.env.CPC_FUZZ_CASES ?? 1500) });
  expect(result.failures, describeFailures(result)).toEqual([]);
  expect(result.summary).toMatch(/\d+ both read, same/);
  expect(result.summary).toMatch(/\d+ both refuse/);
}, 180_000);
