// Runs the runtime's fixture provider (test/fixtures/runtime) as a real child process.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFixture } from '../fixtures/runtime/build.mjs';
import { runNode } from './process.js';

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Bundles the fixture into a fresh temporary directory and returns the path of its bin stub. */
export async function buildRuntimeFixture(): Promise<string> {
  return buildFixture(mkdtempSync(join(tmpdir(), 'cpc-runtime-fixture-')));
}

export const V1 = 'client.authentication.k8s.io/v1';
export const V1BETA1 = 'client.authentication.k8s.io/v1beta1';

export function execInfo(
  apiVersion: string,
  cluster: unknown = { server: 'https://cluster.example:6443' },
  interactive = false,
): string {
  return JSON.stringify({ kind: 'ExecCredential', apiVersion, spec: { interactive, cluster } });
}

/** Runs `node <stub> ...args` with only the given environment (plus PATH and HOME), stdin closed. */
export async function runChild(
  stub: string,
  args: readonly string[],
  env: Record<string, string | undefined>,
  nodeArgs: readonly string[] = [],
): Promise<ChildResult> {
  const { code, signal, stdout, stderr } = await runNode(stub, args, { env, nodeArgs });
  return { code, signal, stdout, stderr };
}
