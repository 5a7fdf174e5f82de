/**
 * The consumer commands of the declarative flow as processes (`clusterprofile tenant apply --to-cluster`,
 * `identity import --from-cluster`) against a stand-in API server on loopback HTTPS: usage errors exit 2, an API
 * server without the CRDs is ERR_TENANT_FLOW_API with the hint, an issuer that never answers is
 * ERR_TENANT_FLOW_TIMEOUT; never a stack trace, nothing on stdout. The whole flow on a real API server:
 * test/e2e/tenant-flow.test.ts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { stringify } from 'yaml';
import { CLI, runNode, startStandIn, type StandIn } from '../helpers/tenant-cert-plugin-run.js';
import { createTestCa } from '../helpers/tls.js';

const dir = mkdtempSync(join(tmpdir(), 'cpc-tenant-flow-'));
const keyFile = join(dir, 'consumer.key');
let server: StandIn;
let kubeconfig: string;
/** Tenant resources the stand-in holds (it never writes a status: no issuer). */
let crdsInstalled = false;

beforeAll(async () => {
  const keygen = await runNode(CLI, ['keygen', '--out', keyFile]);
  expect(keygen.code, keygen.stderr).toBe(0);
  const ca = await createTestCa('tenant-flow-api');
  const tenants = new Map<string, Record<string, any>>();
  server = await startStandIn(ca, (req, res, body) => {
    const reply = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    const url = req.url ?? '';
    if (!crdsInstalled)
      return reply(404, {
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: 'the server could not find the requested resource',
        code: 404,
      });
    const name = /\/tenants\/([^/?]+)$/.exec(url)?.[1];
    if (req.method === 'GET' && name !== undefined) {
      const tenant = tenants.get(name);
      return tenant === undefined
        ? reply(404, {
            kind: 'Status',
            code: 404,
            reason: 'NotFound',
            message: `tenants "${name}" not found`,
            details: { name, kind: 'tenants' },
          })
        : reply(200, tenant);
    }
    if (req.method === 'POST' && url.endsWith('/tenants')) {
      const tenant = JSON.parse(body) as Record<string, any>;
      tenant.metadata = { ...tenant.metadata, generation: 1, uid: 'u1', resourceVersion: '1' };
      tenants.set(tenant.metadata.name, tenant);
      return reply(201, tenant);
    }
    return reply(405, { kind: 'Status', code: 405, message: 'not here' });
  });
  kubeconfig = join(dir, 'provider.kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'p',
          cluster: { server: server.url, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') },
        },
      ],
      users: [{ name: 'u', user: { token: 'bootstrap-token-not-to-be-shown' } }],
      contexts: [{ name: 'p', context: { cluster: 'p', user: 'u', namespace: 'tenants' } }],
      'current-context': 'p',
    }),
    { mode: 0o600 },
  );
});

afterAll(async () => {
  await server?.close();
});

const apply = ['tenant', 'apply', '--key-file', keyFile, '--cluster-id', 'c1', '--provider-cluster-id', 'p1'];

describe('usage', () => {
  test.each([
    [apply, 'ERR_USAGE: tenant apply needs --to-cluster'],
    [
      ['identity', 'import', 'identity.yaml', '--from-cluster', '--key-file', keyFile],
      'ERR_USAGE: give either FILE or --from-cluster, not both',
    ],
    [
      ['identity', 'import', '--from-cluster', '--key-file', keyFile],
      'ERR_USAGE: identity import --from-cluster needs --cluster-id',
    ],
  ])('clusterprofile %j: exit 2', async (args, message) => {
    const result = await runNode(CLI, args);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(message);
    expect(result.code).toBe(2);
  });
});

describe('against a stand-in API server', () => {
  test('without the CRDs: ERR_TENANT_FLOW_API with the hint, the bearer token never shown', async () => {
    crdsInstalled = false;
    for (const args of [
      [...apply, '--to-cluster', '--provider-kubeconfig', kubeconfig],
      [
        'identity',
        'import',
        '--from-cluster',
        '--cluster-id',
        'c1',
        '--key-file',
        keyFile,
        '--provider-kubeconfig',
        kubeconfig,
        '--identity-dir',
        join(dir, 'ids'),
      ],
    ]) {
      const result = await runNode(CLI, args);
      expect(result.stdout).toBe('');
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /ERR_TENANT_FLOW_API: (reading|creating) Tenant tenants\/c1: the API server answered 404: the server could not find the requested resource/,
      );
      expect(result.stderr).toContain('kubectl apply --server-side -f deploy/crds/');
      expect(result.stderr).not.toContain('bootstrap-token-not-to-be-shown');
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
  });

  test('an issuer that never answers: ERR_TENANT_FLOW_TIMEOUT after --timeout, the Tenant written with a signed nonce request', async () => {
    crdsInstalled = true;
    const posts = 'POST /apis/credentials.clusterprofile.io/v1alpha1/namespaces/tenants/tenants';
    const before = server.counts.get(posts) ?? 0;
    const result = await runNode(CLI, [
      ...apply,
      '--to-cluster',
      '--provider-kubeconfig',
      kubeconfig,
      '--timeout',
      '1s',
    ]);
    expect(result.stdout).toBe('');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'ERR_TENANT_FLOW_TIMEOUT: the issuer did not answer Tenant tenants/c1 (generation 1) within 1 s',
    );
    expect(server.counts.get(posts)).toBe(before + 1);
  });

  test('identity import --from-cluster of a Tenant the issuer has not answered: ERR_TENANT_FLOW_NO_IDENTITY', async () => {
    crdsInstalled = true;
    const result = await runNode(CLI, [
      'identity',
      'import',
      '--from-cluster',
      '--cluster-id',
      'c1',
      '--key-file',
      keyFile,
      '--provider-kubeconfig',
      kubeconfig,
      '--identity-dir',
      join(dir, 'ids'),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ERR_TENANT_FLOW_NO_IDENTITY: Tenant tenants/c1 has no Identity yet');
  });
});
