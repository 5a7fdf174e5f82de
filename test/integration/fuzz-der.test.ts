// Differential fuzz test of the CSR builder and DER reader (test/fuzz/der-target.ts): our CSRs verified by
// `openssl req -verify` and decoded by @peculiar/asn1-csr field by field; mutated DER read by both with the same
// verdict. Seed: CPC_FUZZ_SEED (else a fixed one; printed on failure), cases: CPC_FUZZ_CASES. Long run: `npm run fuzz -- --target der`.
import { expect, it } from 'vitest';
import { derTarget } from '../fuzz/der-target.js';
import { describeFailures, fuzzSeed, runFuzz, TEST_SEED } from '../fuzz/runner.js';

it('our CSRs verify and decode alike; mutated DER gets the same verdict from our reader and the library', async () => {
  const seed = fuzzSeed(process.env, TEST_SEED);
  const result = await runFuzz(derTarget(), { seed, cases: Number(process.env.CPC_FUZZ_CASES ?? 2000) });
  expect(result.failures, describeFailures(result)).toEqual([]);
  expect(result.summary).toMatch(/\d+ both read, signature valid/);
  expect(result.summary).toMatch(/\d+ both refuse/);
}, 180_000);
