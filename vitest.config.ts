import { defineConfig } from 'vitest/config';

// Three layers, each against something real (docs/contributing.md, "Tests"):
//  unit: pure logic with a frozen clock; integration: real child processes, real TLS servers, kubectl, a real
//  OpenID Provider; e2e: a real kube-apiserver, kube-controller-manager and etcd built from Go modules.
/** The e2e files whose scenarios put ClusterProfiles on the hub for the library and the fleet to read. */
const CRD_SCENARIOS = [
  'test/e2e/hub.test.ts',
  'test/e2e/fleet.test.ts',
  'test/e2e/fleet-members.test.ts',
  'test/e2e/fleet-member-id.test.ts',
];

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          // The workspaces' tests (plugins/*: the Backstage module in a real Backstage backend) need the control plane.
          include: ['test/e2e/**/*.test.ts', 'plugins/*/test/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      // The library and fleet scenarios again, on a control plane of their own, on upstream's CRD
      // (cluster-inventory-api v0.1.3, v1alpha1 only), then on ours with profiles written as v1alpha2
      // (test/helpers/e2e-crd.ts). Each runs in a group of its own (sequence.groupOrder), one file at a time, never
      // beside another e2e file; vitest starts every project's global setup, so each control plane, up front.
      ...(
        [
          ['e2e-upstream-crd', { CPC_E2E_CRD: 'upstream' }, 1],
          ['e2e-v1alpha2', { CPC_E2E_PROFILE_VERSION: 'v1alpha2' }, 2],
        ] as const
      ).map(([name, env, groupOrder]) => ({
        test: {
          name,
          include: CRD_SCENARIOS,
          env,
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 600_000,
          fileParallelism: false,
          sequence: { groupOrder },
        },
      })),
    ],
  },
});
