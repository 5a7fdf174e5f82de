/**
 * A workflow that outlives many token lifetimes keeps getting valid tokens. The runtime and the provider run
 * in-process with a controlled clock (the only way to cover hours in seconds); the API server is the real local
 * HTTPS server, on the same clock, and judges every token at the moment it is used.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { afterEach, beforeEach, expect, test } from 'vitest';
import { runPlugin } from '../../src/plugin/run.js';
import { tokenRequestProvider } from '../../src/providers/token-request/provider.js';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { createTestCa, type TestCa } from '../helpers/tls.js';

let ca: TestCa;
let api: FakeKubeApi;
let dir: string;
let clock: Date;

beforeEach(async () => {
  clock = new Date('2026-11-22T08:00:00Z');
  ca = await createTestCa('workflow-ca', {
    notBefore: new Date('2026-11-21T00:00:00Z'),
    notAfter: new Date('2027-11-21T00:00:00Z'),
  });
  api = await startFakeKubeApi({
    ca,
    now: () => clock,
    minters: { 'fleet/workflow': ['bootstrap'] },
    serviceAccounts: ['fleet/workflow'],
  });
  dir = await mkdtemp(join(tmpdir(), 'cpc-wf-'));
  await writeFile(
    join(dir, 'kubeconfig'),
    JSON.stringify({
      'current-context': 'c',
      // The bootstrap credential is sent only to its own server, trusting what its kubeconfig trusts.
      clusters: [{ name: 'c', cluster: { server: api.url, 'certificate-authority-data': ca.certBase64 } }],
      users: [{ name: 'u', user: { token: 'bootstrap' } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
    }),
  );
});

afterEach(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

async function getToken(): Promise<{ token: string; expirationTimestamp: string }> {
  const run = runPlugin(tokenRequestProvider, { now: () => clock });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk) => (out += chunk));
  stderr.on('data', (chunk) => (err += chunk));
  const info = {
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: {
      interactive: false,
      cluster: {
        server: api.url,
        'certificate-authority-data': ca.certBase64,
        config: { namespace: 'fleet', serviceAccount: 'workflow', expirationSeconds: 600 },
      },
    },
  };
  const code = await run(
    ['--bootstrap-kubeconfig', join(dir, 'kubeconfig'), '--cache-dir', join(dir, 'cache')],
    { KUBERNETES_EXEC_INFO: JSON.stringify(info) },
    { stdin: Readable.from([]), stdout, stderr },
  );
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out).status;
}

test('four hours of work with 10-minute tokens: every token handed out is accepted when used', async () => {
  const dispatcher = new Agent({ connect: { ca: ca.cert } });
  const seen = new Set<string>();
  const stepMs = 45_000;
  for (let elapsed = 0; elapsed <= 4 * 3600_000; elapsed += stepMs) {
    const status = await getToken();
    // The client's own rule: a credential is used until its expirationTimestamp.
    expect(Date.parse(status.expirationTimestamp)).toBeGreaterThan(clock.getTime());
    const response = await request(`${api.url}/api/v1/namespaces/fleet/pods`, {
      headers: { authorization: `Bearer ${status.token}` },
      dispatcher,
    });
    await response.body.dump();
    expect(response.statusCode, `token used at +${elapsed / 1000}s`).toBe(200);
    seen.add(status.token);
    clock = new Date(clock.getTime() + stepMs);
  }
  // Renewed well before expiry (80% of 600 s, served while ≥ 60 s of that remain) but not on every call:
  // 4 h / ~7-8 min ≈ 30-35 tokens, against 321 calls.
  expect(api.minted.length).toBe(seen.size);
  expect(api.minted.length).toBeGreaterThanOrEqual(28);
  expect(api.minted.length).toBeLessThanOrEqual(40);
  await dispatcher.close();
});

test('a cached token is not served past its renewal point', async () => {
  const first = await getToken();
  clock = new Date(Date.parse(first.expirationTimestamp) - 30_000);
  const second = await getToken();
  expect(second.token).not.toBe(first.token);
  expect(api.minted).toHaveLength(2);
});
