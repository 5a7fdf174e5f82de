// Differential fuzz test of the kubeconfig loader (test/fuzz/kubeconfig-target.ts): generated kubeconfig trees loaded
// by src/kube/kubeconfig-loader.ts and by client-go's clientcmd (test/e2e/kubeconfig-differential, built by the e2e
// global setup). Seed: CPC_FUZZ_SEED (else a fixed one; printed on failure), cases: CPC_FUZZ_CASES. Long run:
// `npm run fuzz -- --target kubeconfig --duration 60s`.
import { expect, it } from 'vitest';
import { e2eContext } from '../helpers/controlplane-e2e.js';
import { kubeconfigTarget } from '../fuzz/kubeconfig-target.js';
import { describeFailures, fuzzSeed, runFuzz, TEST_SEED } from '../fuzz/runner.js';

it('our loader and clientcmd agree on server, CA, credential and failure, or differ as the docs list', async () => {
  const target = await kubeconfigTarget(e2eContext().binaries.kubeconfigDifferential);
  const seed = fuzzSeed(process.env, TEST_SEED);
  const result = await runFuzz(target, { seed, cases: Number(process.env.CPC_FUZZ_CASES ?? 400) });
  expect(result.failures, describeFailures(result)).toEqual([]);
  expect(result.summary).toMatch(/\d+ both load, same/);
}, 180_000);
