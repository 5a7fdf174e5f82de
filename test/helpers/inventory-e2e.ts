/**
 * An inventory on the e2e control plane, written as a cluster manager writes it: ClusterProfiles created as admin with
 * their status through the status subresource (`kubectl apply` would drop it), each access provider reaching the
 * control plane itself; and a wait for what a watcher of that inventory shows next.
 */
import { readFile } from 'node:fs/promises';
import { adminKubectl } from '../e2e/fixtures/tenant-cert-issuer.js';
import { e2eContext } from './controlplane-e2e.js';

/** A profile's status: one access provider `provider` reaching the control plane, `extension` its plugin's config. */
export async function controlPlaneStatus(
  provider: string,
  extension?: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const { controlPlane } = e2eContext();
  const caPem = await readFile(controlPlane.caFile, 'utf8');
  return {
    accessProviders: [
      {
        name: provider,
        cluster: {
          server: controlPlane.server,
          'certificate-authority-data': Buffer.from(caPem).toString('base64'),
          ...(extension === undefined
            ? {}
            : { extensions: [{ name: 'client.authentication.k8s.io/exec', extension }] }),
        },
      },
    ],
    conditions: [
      {
        type: 'ControlPlaneHealthy',
        status: 'True',
        reason: 'Probe',
        message: 'e2e',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      },
    ],
  };
}

/** Writes a profile's status through the status subresource (a merge patch). */
export async function patchProfileStatus(
  namespace: string,
  name: string,
  status: Record<string, unknown>,
): Promise<void> {
  await adminKubectl([
    'patch',
    'clusterprofile',
    name,
    '-n',
    namespace,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
}

/** Creates a v1alpha1 ClusterProfile with `labels`, then writes its status. */
export async function createProfile(
  namespace: string,
  name: string,
  status: Record<string, unknown>,
  labels: Record<string, string> = {},
): Promise<void> {
  const object = {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: { name, namespace, labels },
    spec: { displayName: name, clusterManager: { name: 'e2e' } },
  };
  await adminKubectl(['create', '-f', '-'], JSON.stringify(object));
  await patchProfileStatus(namespace, name, status);
}

/** Polls `probe` every 100 ms until it gives a value (not undefined or false); throws naming `what` after the deadline. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
