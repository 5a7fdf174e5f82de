// Types of ./fleet-profiles.mjs for the TypeScript tests that create profiles the same way.
import type { KubeRequest, KubeResponse } from '../../src/kube/types.js';

export function benchProfileStatus(
  i: number,
  options: { server: string; caPem: string; accountNamespace: string },
): Record<string, unknown>;

export function createBenchProfiles(
  kube: { send(request: KubeRequest): Promise<KubeResponse> },
  namespace: string,
  count: number,
  offset: number,
  statusOf: (i: number) => Record<string, unknown>,
): Promise<void>;
