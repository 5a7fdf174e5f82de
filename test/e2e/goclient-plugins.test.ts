/**
 * The Go reference library as the client of OUR plugins: test/e2e/goclient (cluster-inventory-api pkg/access:
 * NewFromFile, BuildConfigFromCP, then client-go) reads a providers file whose exec command is the built
 * clusterprofile-tenant-cert or clusterprofile-token-request (run by Node 24: process.execPath + the bin path) and lists
 * namespaces on the real API server. client-go passes the ClusterProfile's exec extension as spec.cluster.config.
 *
 * Identity and RBAC: each plugin's identity is first refused (the API server's 403 names the user it saw: the
 * consumer cluster ID for tenant-cert, the ServiceAccount for token-request), then granted `list namespaces`, after
 * which the Go client lists them.
 */
import { readFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyAsAdmin,
  clusterProfileDocument,
  e2eContext,
  exec,
  tempFile,
  type ExecResult,
} from '../helpers/controlplane-e2e.js';
import {
  adminKubectl,
  startE2eIssuer,
  TENANT_CERT_BIN,
  tempDir,
  templatedManifest,
  TOKEN_REQUEST_BIN,
  type E2eIssuer,
} from './fixtures/tenant-cert-issuer.js';

const PROVIDER = 'member-go';
const CONSUMER = 'hub-go';
const NAMESPACE = 'go-fleet';
const SA = 'go-workload';
const SA_USER = `system:serviceaccount:${NAMESPACE}:${SA}`;

let setup: E2eIssuer;
let providersFile: string;

async function runGoclient(provider: string, extension: Record<string, unknown>): Promise<ExecResult> {
  const { binaries, controlPlane } = e2eContext();
  const profile = clusterProfileDocument({
    name: PROVIDER,
    namespace: 'fleet',
    provider,
    server: controlPlane.server,
    caPem: await readFile(controlPlane.caFile, 'utf8'),
    execExtension: extension,
  });
  const profileFile = await tempFile('clusterprofile.yaml', stringify(profile));
  return exec(binaries.goclient, [
    '--providers-file',
    providersFile,
    '--clusterprofile',
    profileFile,
    '--timeout',
    '60s',
  ]);
}

async function grantNamespaceList(name: string, subject: Record<string, string>): Promise<void> {
  await applyAsAdmin({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'e2e-go-namespace-lister' },
    subjects: [subject],
  });
}

/** Waits until the RBAC authorizer's cache has the new binding: the Go client is then run once, not retried. */
async function untilAllowed(user: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const answer = (await adminKubectl(['auth', 'can-i', 'list', 'namespaces', '--as', user]).catch(() => 'no')).trim();
    if (answer === 'yes') return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${user} was not allowed to list namespaces within 20 s`);
}

beforeAll(async () => {
  setup = await startE2eIssuer({ suffix: 'go', providerClusterID: PROVIDER, consumerClusterID: CONSUMER, groups: [] });
  const cacheRoot = await tempDir('kubecache');
  await adminKubectl(['create', 'namespace', NAMESPACE]);
  await applyAsAdmin(
    await templatedManifest('deploy/token-request-rbac.yaml', [
      ['fleet-workload', SA],
      ['fleet', NAMESPACE],
      ['hub-cluster', CONSUMER],
      ['view', 'e2e-go-namespace-lister'],
    ]),
  );
  await applyAsAdmin({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'e2e-go-namespace-lister' },
    rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list'] }],
  });
  const env = [{ name: 'KUBECACHEDIR', value: cacheRoot }];
  const identity = ['--cluster-id', CONSUMER, '--key-file', setup.keyFile];
  providersFile = await tempFile(
    'providers.json',
    JSON.stringify({
      providers: [
        {
          name: 'tenant-cert',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [TENANT_CERT_BIN, ...identity],
            env,
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
        {
          name: 'token-request',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [TOKEN_REQUEST_BIN, '--bootstrap', 'tenant-cert', ...identity],
            env,
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        },
      ],
    }),
  );
}, 60_000);

afterAll(async () => {
  await setup?.issuer.stop();
});

describe('Go reference client (cluster-inventory-api pkg/access) executing our plugins', () => {
  it('clusterprofile-tenant-cert: the API server sees the consumer; refused, then granted, it lists namespaces', async () => {
    const refused = await runGoclient('tenant-cert', setup.config);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`User "${CONSUMER}" cannot list resource "namespaces"`);

    await grantNamespaceList('e2e-go-tenant-cert', {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'User',
      name: CONSUMER,
    });
    await untilAllowed(CONSUMER);
    const listed = await runGoclient('tenant-cert', setup.config);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toEqual(expect.arrayContaining(['default', 'kube-system', NAMESPACE]));
  });

  it('clusterprofile-token-request (tenant-cert bootstrap): the API server sees the ServiceAccount; refused, then granted, it lists namespaces', async () => {
    const extension = { ...setup.config, namespace: NAMESPACE, serviceAccount: SA, expirationSeconds: 600 };
    const refused = await runGoclient('token-request', extension);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`User "${SA_USER}" cannot list resource "namespaces"`);

    // The manifest's example binding gives the ServiceAccount the stand-in role in its namespace only; listing
    // namespaces is cluster-wide, so bind it cluster-wide.
    await grantNamespaceList('e2e-go-token-request', { kind: 'ServiceAccount', name: SA, namespace: NAMESPACE });
    await untilAllowed(SA_USER);
    const listed = await runGoclient('token-request', extension);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toEqual(expect.arrayContaining(['default', 'kube-system', NAMESPACE]));

    // A ServiceAccount the consumer may not mint for: the plugin's refusal reaches the Go client, nothing is listed.
    const other = await runGoclient('token-request', { ...extension, serviceAccount: 'default' });
    expect(other.code).not.toBe(0);
    expect(other.stdout).toBe('');
    expect(other.stderr).toContain('ERR_TOKEN_REQUEST_FORBIDDEN');
  });
});
