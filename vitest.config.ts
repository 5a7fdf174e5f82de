import { defineConfig } from 'vitest/config';

// Three layers, each against something real (docs/contributing.md, "Tests"):
//  unit: pure logic with a frozen clock; integration: real child processes, real TLS servers, kubectl, a real
//  OpenID Provider; e2e: a real kube-apiserver, kube-controller-manager and etcd built from Go modules.
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
    ],
  },
});
