/**
 * The token-request provider at fleet scale, in-process (what ClusterProfileFleet runs): many TokenRequests through one
 * bootstrap kubeconfig share one keep-alive TLS connection to the API server instead of a handshake each; an idle
 * connection is closed and the next TokenRequest opens a new one. Against the real local HTTPS API server.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { obtainCredential } from '../../src/plugin/obtain.js';
import { tokenRequestProvider } from '../../src/providers/token-request/provider.js';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { createTestCa, type TestCa } from '../helpers/tls.js';

const ACCOUNTS = Array.from({ length: 20 }, (_, index) => `member-${index}`);

let ca: TestCa;
let api: FakeKubeApi;
let dir: string;

beforeAll(async () => {
  ca = await createTestCa('reuse-ca');
  api = await startFakeKubeApi({
    ca,
    minters: Object.fromEntries(ACCOUNTS.map((sa) => [`fleet/${sa}`, ['bootstrap']])),
    serviceAccounts: ACCOUNTS.map((sa) => `fleet/${sa}`),
  });
  dir = await mkdtemp(join(tmpdir(), 'cpc-tr-reuse-'));
  await writeFile(
    join(dir, 'kubeconfig'),
    JSON.stringify({
      'current-context': 'c',
      clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority-data': ca.certBase64 } }],
      users: [{ name: 'u', user: { token: 'bootstrap' } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
    }),
  );
});

afterAll(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

function mint(serviceAccount: string): Promise<{ status: { token?: string } }> {
  return obtainCredential(tokenRequestProvider, {
    input: {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: api.url,
          'certificate-authority-data': ca.certBase64,
          config: { namespace: 'fleet', serviceAccount, expirationSeconds: 600 },
        },
      },
    },
    flags: ['--bootstrap-kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache')],
    env: {},
    now: () => new Date(),
    signal: new AbortController().signal,
  });
}

test('20 TokenRequests in a row through one bootstrap identity: one TLS connection; after 2 s idle, a new one', async () => {
  const before = api.server.connections();
  for (const sa of ACCOUNTS) expect((await mint(sa)).status.token).toMatch(/./);
  expect(api.minted.map((record) => `${record.namespace}/${record.serviceAccount}`)).toEqual(
    ACCOUNTS.map((sa) => `fleet/${sa}`),
  );
  expect(api.server.connections() - before).toBe(1);

  // Closed when idle: the next TokenRequest (a forced renewal) connects again.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  await obtainCredential(tokenRequestProvider, {
    input: {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: api.url,
          'certificate-authority-data': ca.certBase64,
          config: { namespace: 'fleet', serviceAccount: 'member-0', expirationSeconds: 600 },
        },
      },
    },
    flags: ['--bootstrap-kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache'), '--force-refresh'],
    env: {},
    now: () => new Date(),
    signal: new AbortController().signal,
  });
  expect(api.minted).toHaveLength(ACCOUNTS.length + 1);
  expect(api.server.connections() - before).toBe(2);
});
