import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, Exec, Watch } from '@kubernetes/client-node';
import { EnvHttpProxyAgent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ClusterProfileKubeConfig } from '../../src/client-node/build-config.js';
import { ExecCredentialCache } from '../../src/exec/authenticator.js';
import type { ExecCluster, ResolvedClusterAccess } from '../../src/resolve/types.js';
import {
  certFingerprint,
  createTestCa,
  startHttpsServer,
  type KeyPairPem,
  type RecordedRequest,
  type TestCa,
  type TestHttpsServer,
} from '../helpers/tls.js';

const PLUGIN = fileURLToPath(new URL('../fixtures/plugins/plugin.mjs', import.meta.url));
const V1 = 'client.authentication.k8s.io/v1' as const;

const namespaceList = JSON.stringify({
  kind: 'NamespaceList',
  apiVersion: 'v1',
  metadata: {},
  items: [{ metadata: { name: 'default' } }],
});

/** An API server stand-in: 200 for an accepted bearer token or any verified client certificate, else 401. */
function apiHandler(accepted: Set<string>) {
  return (request: RecordedRequest, req: http.IncomingMessage, res: http.ServerResponse) => {
    const ok = (request.bearer !== undefined && accepted.has(request.bearer)) || request.clientCert !== undefined;
    if (!ok) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Unauthorized', code: 401 }),
      );
      return;
    }
    if (req.url?.includes('watch=true')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${JSON.stringify({ type: 'ADDED', object: { kind: 'Namespace', metadata: { name: 'default' } } })}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(namespaceList);
  };
}

function access(
  cluster: ExecCluster,
  args: string[],
  extra: Partial<ResolvedClusterAccess['exec']> = {},
): ResolvedClusterAccess {
  return {
    providerName: 'test',
    profile: { namespace: 'fleet', name: 'spoke-1' },
    cluster,
    exec: {
      apiVersion: V1,
      command: PLUGIN,
      args,
      env: [],
      interactiveMode: 'Never',
      provideClusterInfo: true,
      ...extra,
    },
  };
}

const runs = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);

async function failure(promise: Promise<unknown>): Promise<{ code?: string | number; message: string }> {
  try {
    await promise;
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

describe('ClusterProfileKubeConfig: client-node requests authenticated by our exec implementation', () => {
  let ca: TestCa;
  let server: TestHttpsServer;
  let dir: string;
  let certs: KeyPairPem[];
  const accepted = new Set<string>();
  let n = 0;
  const countFile = () => join(dir, `count-${(n += 1)}`);

  beforeAll(async () => {
    ca = await createTestCa();
    server = await startHttpsServer({ ca, clientCert: 'optional', handler: apiHandler(accepted) });
    dir = mkdtempSync(join(tmpdir(), 'cpc-kc-'));
    certs = [await ca.issueClientCert('cert-one'), await ca.issueClientCert('cert-two')];
    certs.forEach((pair, i) => {
      writeFileSync(join(dir, `${i + 1}.crt`), pair.cert);
      writeFileSync(join(dir, `${i + 1}.key`), pair.key);
    });
  });
  afterAll(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    accepted.clear();
    server.requests.length = 0;
  });

  const cluster = (): ExecCluster => ({
    server: server.url,
    'certificate-authority-data': ca.certBase64,
    config: { clusterName: 'spoke-1' },
  });

  it('makeApiClient sends the plugin’s token; the plugin saw KUBERNETES_EXEC_INFO (built-in exec never ran)', async () => {
    accepted.add('token-1');
    const count = countFile();
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', count]),
      new ExecCredentialCache(),
    );
    expect(kc.getCurrentUser()).toEqual({ name: 'test@fleet/spoke-1' });
    const list = await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(list.items.map((ns) => ns.metadata?.name)).toEqual(['default']);
    expect(server.requests.at(-1)?.bearer).toBe('token-1');

    const info = new ClusterProfileKubeConfig(access(cluster(), ['echo-info']), new ExecCredentialCache());
    await failure(info.makeApiClient(CoreV1Api).listNamespace()); // its token is not accepted: we only read it
    const seen = JSON.parse(Buffer.from(server.requests.at(-1)!.bearer!, 'base64').toString());
    expect(seen.info.spec).toEqual({ interactive: false, cluster: cluster() });
  });

  it('1000 concurrent requests to one cluster → exactly 1 exec, 1000 authenticated requests', async () => {
    accepted.add('token-1');
    const count = countFile();
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', count, '--sleep', '50']),
      new ExecCredentialCache(),
    );
    const api = kc.makeApiClient(CoreV1Api);
    const results = await Promise.all(Array.from({ length: 1000 }, () => api.listNamespace()));
    expect(results).toHaveLength(1000);
    expect(runs(count)).toBe(1);
    expect(server.requests.filter((r) => r.bearer === 'token-1')).toHaveLength(1000);
  });

  it('uses the plugin’s client certificate for TLS; close() ends its connections and can forget the credential', async () => {
    const count = countFile();
    const cache = new ExecCredentialCache();
    const kc = new ClusterProfileKubeConfig(access(cluster(), ['cert', '--certs', dir, '--count-file', count]), cache);
    await kc.makeApiClient(CoreV1Api).listNamespace();
    expect(server.requests.at(-1)?.clientCert?.subjectCN).toBe('cert-one');
    await kc.close({ forgetCredential: true });
    expect(cache.size).toBe(0);
    await kc.makeApiClient(CoreV1Api).listNamespace(); // usable again: a new pool, a new exec
    expect(runs(count)).toBe(2);
  });

  it('a rotated client certificate takes effect on new connections (fetch and WebSocket paths)', async () => {
    let now = Date.now();
    const count = countFile();
    const cache = new ExecCredentialCache({ now: () => now });
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['cert', '--certs', dir, '--count-file', count, '--expires-in', '600']),
      cache,
    );
    const api = kc.makeApiClient(CoreV1Api);
    await api.listNamespace();
    await api.listNamespace();
    const first = server.requests.slice(-2);
    expect(first.map((r) => r.clientCert?.fingerprint256)).toEqual([
      certFingerprint(certs[0]!.cert),
      certFingerprint(certs[0]!.cert),
    ]);
    const before = new Set(server.requests.map((r) => r.connection));

    now += 3_600_000; // past expiry: the plugin runs again and returns the second certificate
    await api.listNamespace();
    const rotated = server.requests.at(-1)!;
    expect(runs(count)).toBe(2);
    expect(rotated.clientCert?.fingerprint256).toBe(certFingerprint(certs[1]!.cert));
    expect(before.has(rotated.connection)).toBe(false); // a new TLS connection, not a kept-alive one with the old cert

    // The WebSocket / https.request path (client-node caches its agent per [cluster, user]; ours per certificate).
    const opts: https.RequestOptions = { method: 'GET', path: '/api/v1/namespaces' };
    await kc.applyToHTTPSOptions(opts);
    const status = await new Promise<number>((resolve, reject) => {
      const req = https.request(new URL(server.url), opts, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(200);
    expect(server.requests.at(-1)?.clientCert?.fingerprint256).toBe(certFingerprint(certs[1]!.cert));
  });

  it('401 → the next request re-execs, once, however many requests got the 401', async () => {
    accepted.add('token-2'); // the server already rotated: the plugin's first token is refused
    const count = countFile();
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', count]),
      new ExecCredentialCache(),
    );
    const api = kc.makeApiClient(CoreV1Api);
    const refused = await Promise.allSettled(Array.from({ length: 5 }, () => api.listNamespace()));
    expect(refused.map((r) => r.status)).toEqual(Array(5).fill('rejected'));
    expect((refused[0] as PromiseRejectedResult).reason.code).toBe(401);
    expect(runs(count)).toBe(1);
    await Promise.all([api.listNamespace(), api.listNamespace()]);
    expect(runs(count)).toBe(2);
    expect(server.requests.at(-1)?.bearer).toBe('token-2');
  });

  it('401 on the WebSocket path (Exec/Attach/PortForward handshakes) refreshes too', async () => {
    accepted.add('token-2');
    const count = countFile();
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', count]),
      new ExecCredentialCache(),
    );
    const get = async () => {
      const opts: https.RequestOptions = { method: 'GET', path: '/api/v1/namespaces' };
      await kc.applyToHTTPSOptions(opts);
      return new Promise<number>((resolve, reject) => {
        const req = https.request(new URL(server.url), opts, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
    };
    expect(await get()).toBe(401);
    expect(await get()).toBe(200);
    expect(runs(count)).toBe(2);
    expect(server.requests.at(-1)?.bearer).toBe('token-2');

    // The same through client-node's real Exec (a WebSocket handshake; our test server is no WebSocket server, so
    // even an accepted handshake fails, but the request it made is what counts).
    const execCount = countFile();
    const wkc = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', execCount]),
      new ExecCredentialCache(),
    );
    const attempt = () => failure(new Exec(wkc).exec('default', 'pod', 'c', ['true'], null, null, null, false));
    await attempt();
    expect(server.requests.at(-1)?.bearer).toBe('token-1');
    expect(server.requests.at(-1)?.url).toMatch(/^\/api\/v1\/namespaces\/default\/pods\/pod\/exec\?/);
    await attempt();
    expect(runs(execCount)).toBe(2);
    expect(server.requests.at(-1)?.bearer).toBe('token-2');
  });

  it('Watch authenticates through the plugin, and a 401 on a watch refreshes too', async () => {
    accepted.add('token-2');
    const count = countFile();
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', count]),
      new ExecCredentialCache(),
    );
    const watchOnce = () =>
      new Promise<{ events: string[]; error: unknown }>((resolve) => {
        const events: string[] = [];
        void new Watch(kc).watch(
          '/api/v1/namespaces',
          {},
          (type) => events.push(type),
          (error) => resolve({ events, error }),
        );
      });
    const first = await watchOnce();
    expect((first.error as { statusCode?: number }).statusCode).toBe(401);
    const second = await watchOnce();
    expect(second.events).toEqual(['ADDED']);
    expect(runs(count)).toBe(2);
  });

  it('a hanging plugin past the timeout fails the request with ERR_EXEC_TIMEOUT; the host goes on', async () => {
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['hang']),
      new ExecCredentialCache({ timeoutMs: 500, env: { ...process.env, PIDS_FILE: join(dir, 'pids') } }),
    );
    const e = await failure(kc.makeApiClient(CoreV1Api).listNamespace());
    expect(e.code).toBe('ERR_EXEC_TIMEOUT');
    accepted.add('token-1');
    const ok = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', countFile()]),
      new ExecCredentialCache(),
    );
    await expect(ok.makeApiClient(CoreV1Api).listNamespace()).resolves.toBeDefined();
  });

  it('a bad credential is never cached: each request runs the plugin again and fails clearly', async () => {
    const count = countFile();
    const kc = new ClusterProfileKubeConfig(
      access(cluster(), ['only-cert', '--certs', dir, '--count-file', count]),
      new ExecCredentialCache(),
    );
    const api = kc.makeApiClient(CoreV1Api);
    for (let i = 0; i < 2; i++) {
      const e = await failure(api.listNamespace());
      expect(e.code).toBe('ERR_EXEC_OUTPUT_INVALID');
      expect(e.message).toBe('exec plugin returned only certificate or key, not both');
    }
    expect(runs(count)).toBe(2);
    expect(server.requests).toHaveLength(0);
  });

  it('disable-compression asks for identity encoding', async () => {
    accepted.add('token-1');
    const plain = new ClusterProfileKubeConfig(
      access(cluster(), ['token', '--count-file', countFile()]),
      new ExecCredentialCache(),
    );
    await plain.makeApiClient(CoreV1Api).listNamespace();
    expect(server.requests.at(-1)?.headers['accept-encoding']).toMatch(/gzip/);
    const off = new ClusterProfileKubeConfig(
      access({ ...cluster(), 'disable-compression': true }, ['token', '--count-file', countFile()]),
      new ExecCredentialCache(),
    );
    await off.makeApiClient(CoreV1Api).listNamespace();
    expect(server.requests.at(-1)?.headers['accept-encoding']).toBe('identity');
  });

  it('never uses an environment proxy when proxy-url is unset (even with NODE_USE_ENV_PROXY’s global dispatcher)', async () => {
    accepted.add('token-1');
    const previous = getGlobalDispatcher();
    setGlobalDispatcher(
      new EnvHttpProxyAgent({ httpProxy: 'http://127.0.0.1:9', httpsProxy: 'http://127.0.0.1:9', noProxy: '' }),
    );
    try {
      const kc = new ClusterProfileKubeConfig(
        access(cluster(), ['token', '--count-file', countFile()]),
        new ExecCredentialCache(),
      );
      await expect(kc.makeApiClient(CoreV1Api).listNamespace()).resolves.toBeDefined();
    } finally {
      setGlobalDispatcher(previous);
    }
  });

  it('honours proxy-url (an HTTP CONNECT proxy sees the tunnel)', async () => {
    accepted.add('token-1');
    const tunnels: string[] = [];
    const proxy = http.createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      tunnels.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      const upstream = net.connect(Number(port), host, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
      socket.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const kc = new ClusterProfileKubeConfig(
        access({ ...cluster(), 'proxy-url': proxyUrl }, ['token', '--count-file', countFile()]),
        new ExecCredentialCache(),
      );
      await kc.makeApiClient(CoreV1Api).listNamespace();
      expect(tunnels).toEqual([`127.0.0.1:${server.port}`]);
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it('honours tls-server-name and insecure-skip-tls-verify', async () => {
    const named = await startHttpsServer({
      ca,
      serverCert: await ca.issueServerCert({ ips: [], dns: ['kube.internal'] }),
      handler: apiHandler(new Set(['token-1'])),
    });
    try {
      const base = { server: named.url, 'certificate-authority-data': ca.certBase64 };
      const wrong = new ClusterProfileKubeConfig(
        access(base, ['token', '--count-file', countFile()]),
        new ExecCredentialCache(),
      );
      const refused = (await failure(wrong.makeApiClient(CoreV1Api).listNamespace())) as { cause?: { code?: string } };
      expect(refused.cause?.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
      const right = new ClusterProfileKubeConfig(
        access({ ...base, 'tls-server-name': 'kube.internal' }, ['token', '--count-file', countFile()]),
        new ExecCredentialCache(),
      );
      await expect(right.makeApiClient(CoreV1Api).listNamespace()).resolves.toBeDefined();
      const untrusted = new ClusterProfileKubeConfig(
        access({ server: named.url }, ['token', '--count-file', countFile()]),
        new ExecCredentialCache(),
      );
      const untrustedError = (await failure(untrusted.makeApiClient(CoreV1Api).listNamespace())) as {
        cause?: { code?: string };
      };
      expect(untrustedError.cause?.code).toMatch(/UNABLE_TO_VERIFY|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
      const skip = new ClusterProfileKubeConfig(
        access({ server: named.url, 'insecure-skip-tls-verify': true }, ['token', '--count-file', countFile()]),
        new ExecCredentialCache(),
      );
      await expect(skip.makeApiClient(CoreV1Api).listNamespace()).resolves.toBeDefined();
    } finally {
      await named.close();
    }
  });
});
