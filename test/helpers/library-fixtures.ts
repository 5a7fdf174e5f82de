/**
 * Fixtures for the library tests: upstream's unit-test profile and providers (cluster-inventory-api
 * pkg/access/config_test.go, re-stated as our JSON), and a deep freeze to prove inputs are never written.
 */
import type { AccessConfig, ClusterProfile } from '../../src/resolve/types.js';

export const ARGS_EXT = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args';
export const ENVS_EXT = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs';
export const EXEC_EXT = 'client.authentication.k8s.io/exec';

/** Freezes an object graph in place and returns it (strict-mode writes then throw). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}

/** Every object reachable from `value`. */
export function objectsOf(value: unknown, into = new Set<object>()): Set<object> {
  if (value !== null && typeof value === 'object' && !into.has(value)) {
    into.add(value);
    for (const child of Object.values(value)) objectsOf(child, into);
  }
  return into;
}

export function profile(status: ClusterProfile['status'], name = 'test-cluster', namespace?: string): ClusterProfile {
  return {
    apiVersion: 'multicluster.x-k8s.io/v1alpha1',
    kind: 'ClusterProfile',
    metadata: namespace === undefined ? { name } : { name, namespace },
    spec: { displayName: name, clusterManager: { name: 'test' } },
    status,
  };
}

/** base64 of a short text, standing in for PEM CA data. */
export const CA_DATA = Buffer.from('test-ca-data').toString('base64');

/** Upstream's BuildConfigFromCP profile: exec extension, additional args and envs. */
export function buildProfile(): ClusterProfile {
  return profile({
    accessProviders: [
      {
        name: 'test-provider-1',
        cluster: {
          server: 'https://test-server.com',
          'certificate-authority-data': CA_DATA,
          'proxy-url': 'http://proxy.example.com',
          extensions: [
            { name: EXEC_EXT, extension: { clusterName: 'spoke-1', audience: 'spoke' } },
            { name: ARGS_EXT, extension: ['--audience', 'audience'] },
            { name: ENVS_EXT, extension: { TENANT_ID: 'tenant-id', CLIENT_ID: 'client-id' } },
          ],
        },
      },
    ],
  });
}

/** Upstream's lookup profile: three providers, the last unknown to the providers file. */
export function lookupProfile(): ClusterProfile {
  return profile({
    accessProviders: [
      {
        name: 'test-provider-1',
        cluster: { server: 'https://test-server-1.com', 'certificate-authority-data': CA_DATA },
      },
      {
        name: 'test-provider-2',
        cluster: { server: 'https://test-server-2.com', 'certificate-authority-data': CA_DATA },
      },
      { name: 'unsupported-provider', cluster: { server: 'https://unsupported-server.com' } },
    ],
  });
}

/** Upstream's providers: one with default policies, one with Append/Replace. */
export function upstreamProviders(): AccessConfig {
  return {
    providers: [
      {
        name: 'test-provider-1',
        execConfig: {
          apiVersion: 'client.authentication.k8s.io/v1beta1',
          command: 'test-command-1',
          args: ['arg1', 'arg2'],
        },
      },
      {
        name: 'test-provider-2',
        execConfig: { apiVersion: 'client.authentication.k8s.io/v1beta1', command: 'test-command-2', args: ['arg3'] },
        profileSourcedCLIArgsPolicy: 'Append',
        profileSourcedEnvVarsPolicy: 'Replace',
      },
    ],
  };
}
