// Each plugin binary, as a real child process, against a server that accepts the TCP connection and then never
// answers the TLS handshake (a hung load balancer, a firewall that black-holes after SYN-ACK): `--timeout 1` ends the
// run after about a second with the plugin's coded error and nothing on stdout. The deadline covers connect + TLS,
// not only the HTTP exchange.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNode } from '../helpers/process.js';
import { createKeyFile } from '../helpers/tenant-cert-plugin.js';
import { createTestCa, type TestCa } from '../helpers/tls.js';

const BIN = (name: string) => join(import.meta.dirname, '../../bin', `clusterprofile-${name}.mjs`);

let ca: TestCa;
let silent: Server;
let url: string;
const sockets = new Set<Socket>();
let dir: string;

beforeAll(async () => {
  ca = await createTestCa();
  silent = createServer((socket) => {
    // Accept, read the ClientHello, answer nothing.
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.resume();
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(silent.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'cpc-deadline-'));
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
});

function execInfo(server: string, config: Record<string, unknown>): string {
  return JSON.stringify({
    apiVersion: 'client.authentication.k8s.io/v1',
    kind: 'ExecCredential',
    spec: { interactive: false, cluster: { server, config } },
  });
}

function expectDeadline(
  result: { code: number | null; stdout: string; stderr: string; ms: number },
  code: string,
  name: string,
): void {
  expect(result.stdout).toBe('');
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(new RegExp(`^clusterprofile-${name}: ${code}: `));
  expect(result.stderr).not.toMatch(/\n\s+at /);
  // About the deadline, not a connect timeout (undici's 10 s, before the seam): process start-up plus one second.
  expect(result.ms).toBeGreaterThan(950);
  expect(result.ms).toBeLessThan(1_800);
}

describe('--timeout 1 against a server that never completes the TLS handshake', () => {
  it('tenant-cert: ERR_TENANT_CERT_ISSUER_TIMEOUT', async () => {
    const key = createKeyFile();
    const config = { issuerURL: url, issuerCA: ca.certBase64, providerClusterID: 'member-1' };
    const result = await runNode(
      BIN('tenant-cert'),
      [
        '--cluster-id',
        'consumer-1',
        '--key-file',
        key.file,
        '--cache-dir',
        join(dir, 'tc-cache'),
        '--identity-dir',
        join(dir, 'ids'),
        '--timeout',
        '1',
      ],
      { env: { KUBERNETES_EXEC_INFO: execInfo('https://member.example:6443', config) } },
    );
    expectDeadline(result, 'ERR_TENANT_CERT_ISSUER_TIMEOUT', 'tenant-cert');
    expect(result.stderr).toContain('the issuer did not answer in time');
  });

  it('token-request: ERR_KUBE_UNREACHABLE, no answer within the deadline', async () => {
    const kubeconfig = join(dir, 'bootstrap.kubeconfig');
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'c',
        clusters: [{ name: 'c', cluster: { server: url, 'certificate-authority-data': ca.certBase64 } }],
        users: [{ name: 'u', user: { token: 'bootstrap-token' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      }),
    );
    const config = { namespace: 'fleet', serviceAccount: 'workload' };
    const member = { server: url, 'certificate-authority-data': ca.certBase64, config };
    const result = await runNode(
      BIN('token-request'),
      ['--bootstrap-kubeconfig', kubeconfig, '--cache-dir', join(dir, 'tr-cache'), '--timeout', '1'],
      {
        env: {
          KUBERNETES_EXEC_INFO: JSON.stringify({
            apiVersion: 'client.authentication.k8s.io/v1',
            kind: 'ExecCredential',
            spec: { interactive: false, cluster: member },
          }),
        },
      },
    );
    expectDeadline(result, 'ERR_KUBE_UNREACHABLE', 'token-request');
    expect(result.stderr).toContain(`cannot reach the API server ${url}: no answer within 1000 ms`);
  });

  it('oidc: ERR_OIDC_ISSUER_UNREACHABLE, no answer within the deadline', async () => {
    const secret = join(dir, 'client.secret');
    writeFileSync(secret, 'a-client-secret', { mode: 0o600 });
    const config = {
      issuerURL: url,
      issuerCA: ca.certBase64,
      clientID: 'controller',
      audience: 'https://member.example',
    };
    const result = await runNode(
      BIN('oidc'),
      ['--client-secret-file', secret, '--cache-dir', join(dir, 'oidc-cache'), '--timeout', '1'],
      {
        env: { KUBERNETES_EXEC_INFO: execInfo('https://member.example:6443', config) },
      },
    );
    expectDeadline(result, 'ERR_OIDC_ISSUER_UNREACHABLE', 'oidc');
    expect(result.stderr).toContain('no answer within 1000 ms');
  });

  it('a bad --timeout is a usage error naming the flag', async () => {
    for (const name of ['token-request', 'oidc'] as const) {
      const result = await runNode(BIN(name), ['--timeout', '0'], {
        env: {
          KUBERNETES_EXEC_INFO: execInfo(url, {
            issuerURL: url,
            clientID: 'c',
            audience: 'a',
            namespace: 'n',
            serviceAccount: 's',
          }),
        },
      });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toContain('--timeout "0" is not a number of seconds in (0, 600]');
    }
  });
});
