// The HTTP seam (src/base/http.ts) against real servers on 127.0.0.1 port 0: node:https servers with a test CA, a
// TCP server that accepts and never answers the TLS handshake, one that resets every connection, and an HTTP
// CONNECT proxy. What callers rely on: the body limit, one deadline covering connect + TLS + answer, retries that
// stop at the deadline, the trust store, and no userinfo or sent bearer token in any message.
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect as tcpConnect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatError } from '../../src/base/errors.js';
import {
  createHttpClient,
  isHttpFailure,
  type HttpClientOptions,
  type HttpFailure,
  type HttpRequest,
  type HttpSendOptions,
} from '../../src/base/http.js';
import { createKubeTransport } from '../../src/kube/transport.js';
import { createIssuerSend } from '../../src/providers/oidc/issuer-http.js';
import { issuerClient, sendIssuerRequest } from '../../src/providers/tenant-cert/consumer/transport.js';
import { runNode } from '../helpers/process.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';

let ca: TestCa;
let otherCa: TestCa;
let echo: TestHttpsServer;
let silent: Server;
let silentUrl: string;
/** Sockets the silent server holds, open or not. */
const silentSockets = new Set<Socket>();
let resetting: Server;
let resetUrl: string;
let resets = 0;
let closedUrl: string;

async function listen(server: Server | HttpServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  ca = await createTestCa('seam-ca');
  otherCa = await createTestCa('other-ca');
  echo = await startHttpsServer({
    ca,
    handler: (request, req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const url = new URL(request.url, 'https://x');
        const status = Number(url.searchParams.get('status') ?? '200');
        if (url.pathname === '/echo-bearer') {
          res.writeHead(status, { 'content-type': 'text/plain' });
          res.end(`invalid bearer token "${request.bearer}"`);
          return;
        }
        res.writeHead(status, { 'content-type': 'application/json', 'x-multi': ['a', 'b'] });
        res.end(
          JSON.stringify({
            method: request.method,
            url: request.url,
            contentType: req.headers['content-type'] ?? null,
            body,
          }),
        );
      });
    },
  });
  silent = createServer((socket) => {
    // Reads the ClientHello (so the end of the connection is seen), answers nothing.
    silentSockets.add(socket);
    socket.on('error', () => undefined);
    socket.resume();
  });
  silentUrl = `https://127.0.0.1:${await listen(silent)}`;
  resetting = createServer((socket) => {
    resets += 1;
    socket.on('error', () => undefined);
    socket.resetAndDestroy();
  });
  resetUrl = `https://127.0.0.1:${await listen(resetting)}`;
  const closed = createServer();
  closedUrl = `https://127.0.0.1:${await listen(closed)}`;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
});

afterAll(async () => {
  for (const socket of silentSockets) socket.destroy();
  await Promise.all([
    echo.close(),
    new Promise((resolve) => silent.close(resolve)),
    new Promise((resolve) => resetting.close(resolve)),
  ]);
});

/** Resolves when the server side of `socket` has seen the connection end; fails after `ms`. */
async function closedWithin(socket: Socket, ms: number): Promise<void> {
  if (socket.destroyed) return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the connection was still open after ${ms} ms`)), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function sendOnce(options: HttpClientOptions, request: HttpRequest, sendOptions: HttpSendOptions = {}) {
  const client = createHttpClient(options);
  const started = performance.now();
  try {
    const response = await client.send(request, sendOptions);
    return { response, failure: undefined, ms: performance.now() - started };
  } catch (error) {
    if (!isHttpFailure(error)) throw error;
    return { response: undefined, failure: error as HttpFailure, ms: performance.now() - started };
  } finally {
    await client.close();
  }
}

/** Every message and URL a failure carries, its causes' messages included. */
function printed(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error) {
    parts.push(current.message, String(current), formatError(current));
    const { url, target, path } = current as { url?: string; target?: string; path?: string };
    parts.push(url ?? '', target ?? '', path ?? '');
    current = current.cause;
  }
  return parts.join('\n');
}

describe('requests and answers', () => {
  it('sends JSON to base + path (query kept), reads status, lower-case headers, bytes, text and parsed JSON', async () => {
    const { response } = await sendOnce(
      { tls: { caPem: ca.cert } },
      { method: 'POST', base: `${echo.url}/prefix/`, url: '/apis/x?dryRun=All', json: { a: 1 } },
    );
    expect(response?.status).toBe(200);
    expect(response?.headers['content-type']).toBe('application/json');
    expect(response?.headers['x-multi']).toBe('a, b');
    expect(response?.json).toEqual({
      method: 'POST',
      url: '/prefix/apis/x?dryRun=All',
      contentType: 'application/json',
      body: '{"a":1}',
    });
    expect(response?.body.toString('utf8')).toBe(response?.text);
  });

  it('a string body goes with the given content type; a non-2xx answer is an answer, not a failure', async () => {
    const { response } = await sendOnce(
      { tls: { caPem: ca.cert } },
      {
        method: 'POST',
        url: `${echo.url}/token?status=400`,
        body: 'grant_type=x',
        contentType: 'application/x-www-form-urlencoded',
      },
    );
    expect(response?.status).toBe(400);
    expect(response?.json).toMatchObject({ contentType: 'application/x-www-form-urlencoded', body: 'grant_type=x' });
  });

  it('an error answer that repeats the bearer token we sent has it redacted; a 2xx answer is left as it is', async () => {
    const headers = { authorization: 'Bearer sent-token-0123456789' };
    const refused = await sendOnce(
      { tls: { caPem: ca.cert } },
      { method: 'GET', url: `${echo.url}/echo-bearer?status=401`, headers },
    );
    expect(refused.response?.text).toBe('invalid bearer token "[REDACTED]"');
    expect(refused.response?.body.toString('utf8')).not.toContain('sent-token-0123456789');
    const extra = await sendOnce(
      { tls: { caPem: ca.cert } },
      { method: 'GET', url: `${echo.url}/echo-bearer?status=403`, headers, secrets: ['invalid bearer'] },
    );
    expect(extra.response?.text).toBe('[REDACTED] token "[REDACTED]"');
    const ok = await sendOnce(
      { tls: { caPem: ca.cert } },
      { method: 'GET', url: `${echo.url}/echo-bearer?status=200`, headers },
    );
    expect(ok.response?.text).toBe('invalid bearer token "sent-token-0123456789"');
  });
});

describe('which certificates a CA bundle trusts', () => {
  it("a bundle holding the server's own CA-issued certificate verifies it, as client-go does; another CA's does not", async () => {
    // Open Cluster Management's cluster-proxy publishes its user server's certificate (issued by its own CA) as the
    // profile's certificate-authority-data. Go makes every certificate of the pool an anchor; so does the client.
    const serverCert = await ca.issueServerCert();
    const server = await startHttpsServer({ ca, serverCert });
    try {
      const leafOnly = await sendOnce({ tls: { caPem: serverCert.cert } }, { method: 'GET', url: `${server.url}/x` });
      expect(leafOnly.failure, printed(leafOnly.failure)).toBeUndefined();
      expect(leafOnly.response?.status).toBe(200);
      const other = await createTestCa('cpc-unrelated-ca');
      const refused = await sendOnce({ tls: { caPem: other.cert } }, { method: 'GET', url: `${server.url}/x` });
      expect(refused.response).toBeUndefined();
      expect(printed(refused.failure)).toMatch(/certificate/i);
    } finally {
      await server.close();
    }
  });
});

describe('the body limit', () => {
  let endless: TestHttpsServer;
  let written = 0;
  beforeAll(async () => {
    endless = await startHttpsServer({
      ca,
      handler: (_request, _req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = (): void => {
          while (written < 64 * 1024 * 1024) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => undefined);
        pump();
      },
    });
  });
  afterAll(() => endless.close());

  it('stops reading past the limit with a too-large failure instead of buffering the answer', async () => {
    const { failure } = await sendOnce(
      { tls: { caPem: ca.cert }, maxResponseBytes: 100_000 },
      { method: 'GET', url: endless.url },
    );
    expect(failure).toMatchObject({ kind: 'too-large', limit: 100_000, retryable: false });
    expect(failure?.message).toBe('the answer is larger than 100000 bytes');
    expect(written).toBeLessThan(32 * 1024 * 1024);
  });

  it('an answer of exactly the limit is read', async () => {
    const { response } = await sendOnce(
      { tls: { caPem: ca.cert }, maxResponseBytes: 10_000 },
      { method: 'GET', url: `${echo.url}/` },
    );
    const size = response!.body.length;
    const again = await sendOnce(
      { tls: { caPem: ca.cert }, maxResponseBytes: size },
      { method: 'GET', url: `${echo.url}/` },
    );
    expect(again.response?.body.length).toBe(size);
    const under = await sendOnce(
      { tls: { caPem: ca.cert }, maxResponseBytes: size - 1 },
      { method: 'GET', url: `${echo.url}/` },
    );
    expect(under.failure?.kind).toBe('too-large');
  });
});

describe('one deadline for connect, TLS, request and answer', () => {
  it('covers a TLS handshake the server never answers, and the half-made connection is torn down', async () => {
    const before = silentSockets.size;
    const { failure, ms } = await sendOnce(
      { tls: { caPem: ca.cert }, timeoutMs: 400 },
      { method: 'GET', url: `${silentUrl}/` },
    );
    expect(failure).toMatchObject({
      kind: 'timeout',
      timeoutMs: 400,
      retryable: true,
      message: 'no answer within 400 ms',
    });
    expect(ms).toBeGreaterThan(390);
    expect(ms).toBeLessThan(900);
    expect(silentSockets.size).toBe(before + 1);
    await closedWithin([...silentSockets].at(-1)!, 300);
  });

  it("covers an answer that never comes after the handshake, and a per-send deadline overrides the client's", async () => {
    const hanging = await startHttpsServer({ ca, handler: () => undefined });
    try {
      const { failure, ms } = await sendOnce(
        { tls: { caPem: ca.cert }, timeoutMs: 30_000 },
        { method: 'GET', url: hanging.url },
        { timeoutMs: 300 },
      );
      expect(failure?.kind).toBe('timeout');
      expect(ms).toBeLessThan(800);
      const absolute = await sendOnce(
        { tls: { caPem: ca.cert } },
        { method: 'GET', url: hanging.url },
        { deadline: Date.now() + 300 },
      );
      expect(absolute.failure?.kind).toBe('timeout');
      expect(absolute.ms).toBeLessThan(800);
    } finally {
      await hanging.close();
    }
  });

  it("the caller's signal aborts a send (kind aborted, the reason's message); the half-made connection goes with it", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('interrupted by SIGTERM')), 100);
    const before = silentSockets.size;
    const { failure, ms } = await sendOnce(
      { tls: { caPem: ca.cert }, timeoutMs: 30_000 },
      { method: 'GET', url: `${silentUrl}/` },
      { signal: controller.signal },
    );
    expect(failure).toMatchObject({ kind: 'aborted', message: 'interrupted by SIGTERM', retryable: false });
    expect(ms).toBeLessThan(600);
    expect(silentSockets.size).toBe(before + 1);
    // Torn down by us at the abort, not left to the seam's connect timeout (here the client's 30 s).
    await closedWithin([...silentSockets].at(-1)!, 300);
  });
});

describe('retries', () => {
  it('retries retryable statuses with doubling backoff and returns the last answer when attempts run out', async () => {
    const flaky = await startHttpsServer({ ca, handler: (_r, _req, res) => void res.writeHead(503).end('busy') });
    try {
      const { response, ms } = await sendOnce(
        { tls: { caPem: ca.cert }, retry: { attempts: 3, baseDelayMs: 100 } },
        { method: 'GET', url: flaky.url },
      );
      expect(response?.status).toBe(503);
      expect(flaky.requests).toHaveLength(3);
      expect(ms).toBeGreaterThan(290); // 100 + 200 ms of backoff
    } finally {
      await flaky.close();
    }
  });

  it('succeeds on a later attempt; a status the policy does not name is not retried', async () => {
    let calls = 0;
    const flaky = await startHttpsServer({
      ca,
      handler: (_r, _req, res) => void res.writeHead(++calls < 3 ? 429 : 200).end('x'),
    });
    try {
      const { response } = await sendOnce(
        { tls: { caPem: ca.cert }, retry: { attempts: 5, baseDelayMs: 20 } },
        { method: 'GET', url: flaky.url },
      );
      expect(response?.status).toBe(200);
      expect(calls).toBe(3);
      const onlyFiveHundreds = await sendOnce(
        { tls: { caPem: ca.cert }, retry: { attempts: 5, baseDelayMs: 20, retryStatus: (status) => status >= 500 } },
        { method: 'GET', url: `${echo.url}/?status=429` },
      );
      expect(onlyFiveHundreds.response?.status).toBe(429);
    } finally {
      await flaky.close();
    }
  });

  it('retries a connection reset, counting attempts, and keeps the last failure', async () => {
    resets = 0;
    const { failure } = await sendOnce(
      { tls: { caPem: ca.cert }, retry: { attempts: 4, baseDelayMs: 10 } },
      { method: 'GET', url: `${resetUrl}/` },
    );
    expect(failure?.kind).toBe('reset');
    expect(failure?.code).toBe('ECONNRESET');
    expect(resets).toBe(4);
  });

  it('never sleeps or tries past the deadline', async () => {
    const busy = await startHttpsServer({ ca, handler: (_r, _req, res) => void res.writeHead(503).end('busy') });
    try {
      const { response, ms } = await sendOnce(
        { tls: { caPem: ca.cert }, timeoutMs: 1_000, retry: { attempts: 50, baseDelayMs: 200 } },
        { method: 'GET', url: busy.url },
      );
      expect(response?.status).toBe(503);
      expect(ms).toBeLessThan(1_100);
      // 200 + 400 ms fit in the second; 800 more would not: three attempts, then the last answer.
      expect(busy.requests).toHaveLength(3);
    } finally {
      await busy.close();
    }
    const stalled = await sendOnce(
      { tls: { caPem: ca.cert }, timeoutMs: 500, retry: { attempts: 5, baseDelayMs: 10 } },
      { method: 'GET', url: `${silentUrl}/` },
    );
    expect(stalled.failure?.kind).toBe('timeout');
    expect(stalled.ms).toBeLessThan(900);
  });

  it('does not retry what will not heal: an untrusted certificate', async () => {
    const foreign = await startHttpsServer({ ca: otherCa });
    let connections = 0;
    foreign.server.on('connection', () => (connections += 1));
    try {
      const { failure } = await sendOnce(
        { tls: { caPem: ca.cert }, retry: { attempts: 4, baseDelayMs: 10 } },
        { method: 'GET', url: foreign.url },
      );
      expect(failure).toMatchObject({ kind: 'certificate', retryable: false });
      expect(connections).toBe(1);
    } finally {
      await foreign.close();
    }
  });
});

describe('the trust store and the client certificate', () => {
  it('trusts only the given CA; without one the system roots (which do not know a test CA); skip-verify only when set', async () => {
    expect((await sendOnce({ tls: { caPem: otherCa.cert } }, { method: 'GET', url: echo.url })).failure).toMatchObject({
      kind: 'certificate',
      code: 'SELF_SIGNED_CERT_IN_CHAIN',
    });
    expect((await sendOnce({}, { method: 'GET', url: echo.url })).failure?.kind).toBe('certificate');
    expect(
      (await sendOnce({ tls: { insecureSkipVerify: false } }, { method: 'GET', url: echo.url })).failure?.kind,
    ).toBe('certificate');
    expect(
      (await sendOnce({ tls: { insecureSkipVerify: true } }, { method: 'GET', url: echo.url })).response?.status,
    ).toBe(200);
  });

  it('verifies the server name given as servername instead of the URL host', async () => {
    const named = await startHttpsServer({
      ca,
      serverCert: await ca.issueServerCert({ ips: [], dns: ['api.cluster.internal'] }),
    });
    try {
      expect((await sendOnce({ tls: { caPem: ca.cert } }, { method: 'GET', url: named.url })).failure).toMatchObject({
        kind: 'certificate',
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      });
      expect(
        (
          await sendOnce(
            { tls: { caPem: ca.cert, servername: 'api.cluster.internal' } },
            { method: 'GET', url: named.url },
          )
        ).response?.status,
      ).toBe(200);
    } finally {
      await named.close();
    }
  });

  it('presents the client certificate', async () => {
    const mtls = await startHttpsServer({ ca, clientCert: 'require' });
    const pair = await ca.issueClientCert('consumer-1');
    try {
      const { response } = await sendOnce(
        { tls: { caPem: ca.cert, certPem: pair.cert, keyPem: pair.key } },
        { method: 'GET', url: mtls.url },
      );
      expect(response?.status).toBe(200);
      expect(mtls.requests[0]?.clientCert?.subjectCN).toBe('consumer-1');
      expect((await sendOnce({ tls: { caPem: ca.cert } }, { method: 'GET', url: mtls.url })).failure?.kind).toMatch(
        /^(tls|reset)$/,
      );
    } finally {
      await mtls.close();
    }
  });
});

describe('proxies', () => {
  let proxy: HttpServer;
  let proxyUrl: string;
  const tunnels: string[] = [];
  beforeAll(async () => {
    proxy = createHttpServer();
    proxy.on('connect', (req, client: Socket, head: Buffer) => {
      tunnels.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      const upstream = tcpConnect(Number(port), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    proxyUrl = `http://127.0.0.1:${await listen(proxy)}`;
  });
  afterAll(() => new Promise<void>((resolve) => proxy.close(() => resolve())));

  it('tunnels through an explicit proxy (TLS still verified end to end); NO_PROXY-style exemptions go direct', async () => {
    tunnels.length = 0;
    const through = await sendOnce(
      { tls: { caPem: ca.cert }, proxy: { url: proxyUrl } },
      { method: 'GET', url: `${echo.url}/` },
    );
    expect(through.response?.status).toBe(200);
    expect(tunnels).toEqual([new URL(echo.url).host]);
    const untrusted = await sendOnce(
      { tls: { caPem: otherCa.cert }, proxy: { url: proxyUrl } },
      { method: 'GET', url: `${echo.url}/` },
    );
    expect(untrusted.failure?.kind).toBe('certificate');
    tunnels.length = 0;
    const exempt = await sendOnce(
      { tls: { caPem: ca.cert }, proxy: { url: proxyUrl, noProxy: '127.0.0.1' } },
      { method: 'GET', url: `${echo.url}/` },
    );
    expect(exempt.response?.status).toBe(200);
    expect(tunnels).toEqual([]);
  });

  it("sends the proxy URL's userinfo as Proxy-Authorization; a refused tunnel is kind proxy, without the userinfo", async () => {
    const refusing = createHttpServer();
    const seen: (string | undefined)[] = [];
    refusing.on('connect', (req, client: Socket) => {
      seen.push(req.headers['proxy-authorization']);
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n');
    });
    const url = `http://${encodeURIComponent('us er')}:${encodeURIComponent('p@ss')}@127.0.0.1:${await listen(refusing)}`;
    try {
      const { failure } = await sendOnce(
        { tls: { caPem: ca.cert }, proxy: { url } },
        { method: 'GET', url: `${echo.url}/` },
      );
      expect(failure).toMatchObject({ kind: 'proxy', retryable: false });
      expect(failure?.message).toContain('Proxy response (407)');
      expect(failure?.message).not.toContain('p@ss');
      expect(seen).toEqual([`Basic ${Buffer.from('us er:p@ss').toString('base64')}`]);
    } finally {
      await new Promise<void>((resolve) => refusing.close(() => resolve()));
    }
  });

  it("sends an http:// origin's request to an http:// proxy as an absolute URL", async () => {
    const plain = createHttpServer((req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url })),
    );
    const plainUrl = `http://127.0.0.1:${await listen(plain)}`;
    const forwarded: string[] = [];
    const forwarding = createHttpServer((req, res) => {
      forwarded.push(req.url ?? '');
      const target = new URL(req.url ?? '');
      const upstream = tcpConnect(Number(target.port), target.hostname, () => {
        upstream.write(
          `GET ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${target.host}\r\nconnection: close\r\n\r\n`,
        );
      });
      upstream.pipe(res.socket!);
    });
    try {
      const { response } = await sendOnce(
        { proxy: { url: `http://127.0.0.1:${await listen(forwarding)}` } },
        { method: 'GET', url: `${plainUrl}/p?q=1` },
      );
      expect(response?.json).toEqual({ url: '/p?q=1' });
      expect(forwarded).toEqual([`${plainUrl}/p?q=1`]);
    } finally {
      forwarding.closeAllConnections();
      await Promise.all([
        new Promise((resolve) => forwarding.close(resolve)),
        new Promise((resolve) => plain.close(resolve)),
      ]);
    }
  });

  it('tunnels through a SOCKS5 proxy (the host name resolved by the proxy; username and password when given)', async () => {
    const requests: { host: string; port: number; user?: string }[] = [];
    const socks = createServer((client) => {
      client.on('error', () => undefined);
      let stage = 'greeting';
      let user: string | undefined;
      let buffered = Buffer.alloc(0);
      client.on('data', (chunk: Buffer) => {
        if (stage === 'piped') return;
        buffered = Buffer.concat([buffered, chunk]);
        if (stage === 'greeting' && buffered.length >= 2 && buffered.length >= 2 + buffered[1]!) {
          const methods = [...buffered.subarray(2, 2 + buffered[1]!)];
          buffered = buffered.subarray(2 + buffered[1]!);
          stage = methods.includes(2) ? 'auth' : 'request';
          client.write(Buffer.from([5, methods.includes(2) ? 2 : 0]));
        }
        if (stage === 'auth' && buffered.length >= 2) {
          const userLength = buffered[1]!;
          const passLength = buffered[2 + userLength];
          if (passLength === undefined || buffered.length < 3 + userLength + passLength) return;
          user = `${buffered.subarray(2, 2 + userLength).toString()}:${buffered.subarray(3 + userLength, 3 + userLength + passLength).toString()}`;
          buffered = buffered.subarray(3 + userLength + passLength);
          stage = 'request';
          client.write(Buffer.from([1, 0]));
        }
        if (stage === 'request' && buffered.length >= 5) {
          const type = buffered[3];
          const end = type === 3 ? 5 + buffered[4]! : type === 1 ? 8 : 20;
          if (buffered.length < end + 2) return;
          const host = type === 3 ? buffered.subarray(5, end).toString() : [...buffered.subarray(4, end)].join('.');
          const port = buffered.readUInt16BE(end);
          requests.push({ host, port, ...(user === undefined ? {} : { user }) });
          stage = 'piped';
          const rest = buffered.subarray(end + 2);
          const upstream = tcpConnect(port, host === 'localhost' ? '127.0.0.1' : host, () => {
            client.write(Buffer.from([5, 0, 0, 1, 127, 0, 0, 1, 0, 0]));
            upstream.write(rest);
            upstream.pipe(client).pipe(upstream);
          });
          upstream.on('error', () => client.destroy());
        }
      });
    });
    const socksPort = await listen(socks);
    const named = await startHttpsServer({ ca, serverCert: await ca.issueServerCert({ ips: [], dns: ['localhost'] }) });
    try {
      const target = `https://localhost:${new URL(named.url).port}/`;
      const plain = await sendOnce(
        { tls: { caPem: ca.cert }, proxy: { url: `socks5://127.0.0.1:${socksPort}` } },
        { method: 'GET', url: target },
      );
      expect(plain.response?.status).toBe(200);
      const withUser = await sendOnce(
        { tls: { caPem: ca.cert }, proxy: { url: `socks5h://me:secret@127.0.0.1:${socksPort}` } },
        { method: 'GET', url: target },
      );
      expect(withUser.response?.status).toBe(200);
      const untrusted = await sendOnce(
        { tls: { caPem: otherCa.cert }, proxy: { url: `socks5://127.0.0.1:${socksPort}` } },
        { method: 'GET', url: target },
      );
      expect(untrusted.failure?.kind).toBe('certificate');
      expect(requests.map(({ host, user }) => ({ host, user }))).toEqual([
        { host: 'localhost', user: undefined },
        { host: 'localhost', user: 'me:secret' },
        { host: 'localhost', user: undefined },
      ]);
    } finally {
      await named.close();
      await new Promise((resolve) => socks.close(resolve));
    }
  });

  it('never takes a proxy from the environment', async () => {
    const saved = { HTTPS_PROXY: process.env['HTTPS_PROXY'], https_proxy: process.env['https_proxy'] };
    process.env['HTTPS_PROXY'] = process.env['https_proxy'] = `http://127.0.0.1:${new URL(closedUrl).port}`;
    try {
      expect(
        (await sendOnce({ tls: { caPem: ca.cert } }, { method: 'GET', url: `${echo.url}/` })).response?.status,
      ).toBe(200);
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe('userinfo is never printed', () => {
  const secret = 'pa55w0rd-in-url';
  const withUserinfo = (url: string): string => url.replace('https://', `https://admin:${secret}@`);

  it.each([
    ['refused', () => ({ url: closedUrl, caPem: ca.cert, limit: undefined })],
    ['timeout', () => ({ url: silentUrl, caPem: ca.cert, limit: undefined })],
    ['certificate', () => ({ url: echo.url, caPem: otherCa.cert, limit: undefined })],
    ['too-large', () => ({ url: echo.url, caPem: ca.cert, limit: 10 })],
    ['reset', () => ({ url: resetUrl, caPem: ca.cert, limit: undefined })],
  ] as const)('%s', async (kind, make) => {
    const { url, caPem, limit } = make();
    const base = withUserinfo(url);
    const { failure } = await sendOnce(
      { tls: { caPem }, timeoutMs: 300, ...(limit === undefined ? {} : { maxResponseBytes: limit }) },
      { method: 'GET', url: `${base}/path` },
    );
    expect(failure?.kind).toBe(kind);
    expect(failure?.url).toContain('***@');
    expect(printed(failure)).not.toContain(secret);
    // The three adapters' coded errors too (their own limits are larger than a small answer: too-large is the seam's).
    const kube = createKubeTransport(
      { server: base, caPem },
      { kind: 'none' },
      { timeoutMs: 300, ...(limit === undefined ? {} : { maxResponseBytes: limit }) },
    );
    const kubeError = await kube.send({ method: 'GET', path: '/version' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    await kube.close();
    expect(kubeError).toMatchObject({
      code: kind === 'too-large' ? 'ERR_KUBE_RESPONSE_TOO_LARGE' : 'ERR_KUBE_UNREACHABLE',
    });
    if (kind === 'too-large') return;
    const oidc = createIssuerSend({
      issuerCA: caPem,
      proxy: { httpsProxy: undefined, noProxy: undefined },
      timeoutMs: 300,
    });
    const oidcError = await oidc
      .send({ method: 'GET', url: `${base}/.well-known/openid-configuration`, headers: {} })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    await oidc.close();
    const client = issuerClient(caPem, 300);
    const tenantError = await sendIssuerRequest(
      { method: 'POST', url: new URL(`${base}/v1/nonces`), headers: {}, body: '{}' },
      { client, timeoutMs: 300 },
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    await client.close();
    expect(oidcError).toMatchObject({ code: 'ERR_OIDC_ISSUER_UNREACHABLE' });
    expect(tenantError).toMatchObject({ code: expect.stringMatching(/^ERR_TENANT_CERT_ISSUER_/) });
    for (const error of [kubeError, oidcError, tenantError]) {
      expect(printed(error)).not.toContain(secret);
    }
  });

  it('in a URL that is refused before any request', async () => {
    for (const bad of [`ftp://admin:${secret}@host/`, `https://admin:${secret}@host:notaport/`]) {
      const { failure } = await sendOnce({}, { method: 'GET', url: bad });
      expect(failure?.kind).toBe('url');
      expect(printed(failure)).not.toContain(secret);
      let kubeError: unknown;
      try {
        createKubeTransport({ server: bad }, { kind: 'none' });
      } catch (error) {
        kubeError = error;
      }
      expect(kubeError).toMatchObject({ code: 'ERR_KUBE_ENDPOINT' });
      expect(printed(kubeError)).not.toContain(secret);
    }
  });

  it('in a proxy URL', async () => {
    const { failure } = await sendOnce(
      { tls: { caPem: ca.cert }, proxy: { url: `http://admin:${secret}@127.0.0.1:${new URL(closedUrl).port}` } },
      { method: 'GET', url: echo.url },
    );
    expect(failure?.kind).toBe('refused');
    expect(printed(failure)).not.toContain(secret);
  });
});

describe('HTTP/1.1 connections (src/base/http/http1.ts and the pool of src/base/http/pool.ts on real sockets)', () => {
  /** A plain TCP server answering each request with `answer(n)` (n counts requests); it counts connections. */
  async function rawServer(
    answer: (request: number, socket: Socket) => void,
  ): Promise<{ url: string; connections: () => number; requests: () => number; close: () => Promise<void> }> {
    let connections = 0;
    let requests = 0;
    const sockets = new Set<Socket>();
    const server = createServer((socket) => {
      connections += 1;
      sockets.add(socket);
      socket.on('error', () => undefined);
      let buffered = '';
      socket.setEncoding('latin1').on('data', (chunk: string) => {
        buffered += chunk;
        // Requests without a body (GET) or with a Content-Length body: one answer per complete request.
        for (;;) {
          const end = buffered.indexOf('\r\n\r\n');
          if (end === -1) return;
          const length = Number(/content-length: (\d+)/i.exec(buffered.slice(0, end))?.[1] ?? 0);
          if (buffered.length < end + 4 + length) return;
          buffered = buffered.slice(end + 4 + length);
          requests += 1;
          answer(requests, socket);
        }
      });
    });
    const port = await listen(server);
    return {
      url: `http://127.0.0.1:${port}`,
      connections: () => connections,
      requests: () => requests,
      close: async () => {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
      },
    };
  }

  /**
   * Runs `body` in a child Node.js process with the built seam's `createHttpClient` in scope and `url` as its last
   * argument: what the seam leaves behind (an error without a listener, a handle holding the event loop) shows in how
   * that process ends.
   */
  function runSeam(body: string, url: string) {
    const script = `const { createHttpClient } = await import(${JSON.stringify(new URL('../../dist/base/http.js', import.meta.url).href)});\n${body}`;
    return runNode('--input-type=module', ['-e', script, url]);
  }

  it('keeps a connection alive for the next send, and opens a new one after Connection: close', async () => {
    const server = await rawServer((n, socket) =>
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 1\r\n${n >= 3 ? 'Connection: close\r\n' : ''}\r\n${n}`),
    );
    const client = createHttpClient();
    try {
      const bodies: string[] = [];
      for (let i = 0; i < 4; i++) bodies.push((await client.send({ method: 'GET', url: `${server.url}/` })).text);
      expect(bodies).toEqual(['1', '2', '3', '4']);
      // 1 and 2 on the first connection, 3 on it too (then closed by its answer), 4 on a second one.
      expect(server.connections()).toBe(2);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('a kept-alive connection the server closes, or that outlives its Keep-Alive timeout, is not used again', async () => {
    const server = await rawServer((n, socket) => {
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 1\r\n${n === 2 ? 'Keep-Alive: timeout=1\r\n' : ''}\r\n${n}`);
      // The first connection is ended by the server once idle, without having said so in its answer.
      if (n === 1) setTimeout(() => socket.end(), 20);
    });
    const client = createHttpClient();
    try {
      expect((await client.send({ method: 'GET', url: server.url })).text).toBe('1');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await client.send({ method: 'GET', url: server.url })).text).toBe('2');
      // timeout=1: kept at most 1 s less a second of margin — dropped at once.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await client.send({ method: 'GET', url: server.url })).text).toBe('3');
      expect(server.connections()).toBe(3);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('reads a chunked answer delivered in odd pieces; an answer cut short is a reset', async () => {
    const server = await rawServer((n, socket) => {
      if (n === 2) {
        socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort');
        return;
      }
      const bytes =
        'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n6;x=y\r\n:[1,2]\r\n1\r\n}\r\n0\r\n\r\n';
      let offset = 0;
      const next = (): void => {
        socket.write(bytes.slice(offset, offset + 3));
        offset += 3;
        if (offset < bytes.length) setTimeout(next, 1);
      };
      next();
    });
    try {
      const { response } = await sendOnce({}, { method: 'GET', url: server.url });
      expect(response?.json).toEqual({ a: [1, 2] });
      const { failure } = await sendOnce({}, { method: 'GET', url: server.url });
      expect(failure).toMatchObject({ kind: 'reset', code: 'ECONNRESET' });
      expect(failure?.message).toContain('the connection closed before the answer was complete');
    } finally {
      await server.close();
    }
  });

  it('refuses a header value with a line break before anything is sent, without quoting the value', async () => {
    const server = await rawServer((_n, socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
    try {
      const { failure } = await sendOnce(
        {},
        { method: 'GET', url: server.url, headers: { authorization: 'Bearer tok3n\r\nX-Evil: 1' } },
      );
      expect(failure).toMatchObject({ kind: 'network', code: 'ERR_INVALID_CHAR' });
      expect(failure?.message).toContain('authorization');
      expect(printed(failure)).not.toContain('tok3n');
      expect(server.requests()).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('a connection cut during the TLS handshake is a reset failure, never an uncaught exception', async () => {
    // An error the seam left without a listener would end the child.
    const dropping = createServer((socket) => socket.destroy());
    const port = await listen(dropping);
    try {
      const result = await runSeam(
        `const client = createHttpClient({ tls: { insecureSkipVerify: true }, retry: { attempts: 2, baseDelayMs: 1 } });
for (let i = 0; i < 3; i++) await client.send({ method: 'GET', url: process.argv.at(-1) }).catch((e) => process.stdout.write(e.kind + ' ' + e.code + '\\n'));
await new Promise((resolve) => setTimeout(resolve, 50));
await client.close();`,
        `https://127.0.0.1:${port}/`,
      );
      expect(result).toMatchObject({
        code: 0,
        stderr: '',
        stdout: 'reset ECONNRESET\nreset ECONNRESET\nreset ECONNRESET\n',
      });
    } finally {
      await new Promise((resolve) => dropping.close(resolve));
    }
  });

  it('an idle kept-alive connection does not keep a process alive', async () => {
    const server = await rawServer((_n, socket) => socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok'));
    try {
      // A child that sends once and never closes its client.
      const result = await runSeam(
        `const response = await createHttpClient().send({ method: 'GET', url: process.argv.at(-1) });
process.stdout.write(response.text);`,
        server.url,
      );
      expect(result).toMatchObject({ code: 0, stdout: 'ok' });
      expect(result.ms).toBeLessThan(5000);
      expect(server.connections()).toBe(1);
    } finally {
      await server.close();
    }
  });
});
