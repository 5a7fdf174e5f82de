/**
 * The point of `clusterprofile kubeconfig`: kubectl (the real one on this machine) uses the rendered kubeconfig, runs
 * the exec plugin the providers file selects with KUBERNETES_EXEC_INFO (provideClusterInfo + the exec extension as
 * spec.cluster.config), and reaches a local HTTPS API server with the bearer token the plugin derived.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBin } from '../helpers/library-cli.js';
import { buildProfile } from '../helpers/library-fixtures.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';

const PLUGIN = fileURLToPath(new URL('../fixtures/cli/exec-plugin.mjs', import.meta.url));
// clusterName.audience (from spec.cluster.config) . last arg (additional-args, Append) . TENANT_ID (additional-envs)
const EXPECTED_TOKEN = 'spoke-1.spoke.audience.tenant-id';

let dir: string;
let ca: TestCa;
let server: TestHttpsServer;

function kubectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'kubectl',
      args,
      { env: { PATH: process.env.PATH ?? '', HOME: dir }, timeout: 30_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

async function kubeconfigFor(clusterName: string): Promise<string> {
  const profile = buildProfile();
  profile.metadata = { name: clusterName, namespace: 'fleet' };
  const cluster = profile.status!.accessProviders![0]!.cluster!;
  cluster.server = server.url;
  cluster['certificate-authority-data'] = ca.certBase64;
  delete cluster['proxy-url'];
  cluster.extensions![0]!.extension = { clusterName, audience: 'spoke' };
  const profileFile = join(dir, `${clusterName}.json`);
  await writeFile(profileFile, JSON.stringify(profile));
  const result = await runBin([
    'kubeconfig',
    '--profile',
    profileFile,
    '--clusterprofile-provider-file',
    join(dir, 'providers.json'),
  ]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  const file = join(dir, `${clusterName}.kubeconfig`);
  await writeFile(file, result.stdout, { mode: 0o600 });
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-kubectl-'));
  await writeFile(
    join(dir, 'providers.json'),
    JSON.stringify({
      providers: [
        {
          name: 'test-provider-1',
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command: process.execPath,
            args: [PLUGIN],
            provideClusterInfo: true,
          },
          profileSourcedCLIArgsPolicy: 'Append',
          profileSourcedEnvVarsPolicy: 'AppendIfNotExists',
        },
      ],
    }),
  );
  ca = await createTestCa();
  server = await startHttpsServer({
    ca,
    handler(request, _req, res) {
      res.setHeader('content-type', 'application/json');
      if (request.bearer !== EXPECTED_TOKEN) {
        res.writeHead(401);
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            metadata: {},
            status: 'Failure',
            message: 'Unauthorized',
            reason: 'Unauthorized',
            code: 401,
          }),
        );
        return;
      }
      res.writeHead(200);
      res.end(
        JSON.stringify({
          kind: 'APIVersions',
          versions: ['v1'],
          serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }],
        }),
      );
    },
  });
});

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('kubectl with a rendered kubeconfig', () => {
  it('runs the plugin with the cluster info and the extension, and authenticates with the derived token', async () => {
    const kubeconfig = await kubeconfigFor('spoke-1');
    const before = server.requests.length;
    const result = await kubectl(['--kubeconfig', kubeconfig, 'get', '--raw', '/api']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    const seen = server.requests.slice(before);
    // (this kubectl build asks /version first)
    expect(seen.map((r) => r.url)).toContain('/api');
    for (const request of seen) expect(request.bearer).toBe(EXPECTED_TOKEN);
  });

  it('fails when the plugin derives another token (another cluster in spec.cluster.config)', async () => {
    const kubeconfig = await kubeconfigFor('spoke-2');
    const result = await kubectl(['--kubeconfig', kubeconfig, 'get', '--raw', '/api']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Unauthorized/);
    expect(server.requests.some((r) => r.bearer === 'spoke-2.spoke.audience.tenant-id')).toBe(true);
  });
});
