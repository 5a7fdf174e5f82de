/**
 * The one Kubernetes client (src/kube/kube-client.ts) and the one list+watch (src/kube/watch.ts) against a real
 * HTTPS server on port 0: what a user notices when a credential rotates or a watch goes quiet.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { KubeClient } from '../../src/kube/kube-client.js';
import { listAndWatch } from '../../src/kube/watch.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHandler, type TestHttpsServer } from '../helpers/tls.js';

let ca: TestCa;
let dir: string;
let server: TestHttpsServer | undefined;
let client: KubeClient | undefined;

beforeAll(async () => {
  ca = await createTestCa();
  dir = mkdtempSync(join(tmpdir(), 'kube-client-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const unauthorized = { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: 'Unauthorized', code: 401 };

/** A kubeconfig for `url` whose user is `user` (a tokenFile, an exec...). */
function kubeconfig(name: string, url: string, user: Record<string, unknown>): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'c', cluster: { server: url, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') } },
      ],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return file;
}

describe('KubeClient: a rotated credential', () => {
  it('a token file rotated under it is read again after a 401, and the request succeeds on the same call', async () => {
    let accepted = 'token-2';
    server = await startHttpsServer({
      ca,
      handler: (request, _req, res) =>
        request.bearer === accepted ? json(res, 200, { ok: request.bearer }) : json(res, 401, unauthorized),
    });
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'token-1\n');
    const file = kubeconfig('token-file.kubeconfig', server.url, { tokenFile });
    client = await KubeClient.load({ kubeconfig: file }, { env: {}, cwd: dir });
    // The kubelet (or whoever) writes the new token; the API server already wants it.
    writeFileSync(tokenFile, 'token-2\n');
    const response = await client.send({ method: 'GET', path: '/api/v1/namespaces/ns/secrets/s' });
    expect(response).toEqual({ status: 200, body: { ok: 'token-2' } });
    expect(server.requests.map((request) => request.bearer)).toEqual(['token-1', 'token-2']);

    // A credential that no file can fix: the 401 is the caller's, after one more try with what was read.
    accepted = 'token-3';
    const refused = await client.send({ method: 'GET', path: '/api/v1/namespaces/ns/secrets/s' });
    expect(refused.status).toBe(401);
    expect(server.requests.map((request) => request.bearer)).toEqual(['token-1', 'token-2', 'token-2']);
  });

  it('a token file is read again once it is older than the re-read age, without a 401', async () => {
    server = await startHttpsServer({ ca, handler: (request, _req, res) => json(res, 200, { ok: request.bearer }) });
    const tokenFile = join(dir, 'token-aged');
    writeFileSync(tokenFile, 'aged-1\n');
    let now = 0;
    client = await KubeClient.load(
      { kubeconfig: kubeconfig('aged.kubeconfig', server.url, { tokenFile }) },
      { env: {}, cwd: dir },
      { now: () => now },
    );
    await client.send({ method: 'GET', path: '/version' });
    writeFileSync(tokenFile, 'aged-2\n');
    now = 59_000;
    await client.send({ method: 'GET', path: '/version' });
    now = 60_000;
    await client.send({ method: 'GET', path: '/version' });
    expect(server.requests.map((request) => request.bearer)).toEqual(['aged-1', 'aged-1', 'aged-2']);
  });

  it("an exec user's credential is dropped on a 401, the plugin runs again and the request succeeds", async () => {
    server = await startHttpsServer({
      ca,
      handler: (request, _req, res) =>
        request.bearer === 'exec-2' ? json(res, 200, { ok: request.bearer }) : json(res, 401, unauthorized),
    });
    const counter = join(dir, 'exec-counter');
    writeFileSync(counter, '0');
    const plugin = join(dir, 'plugin.mjs');
    writeFileSync(
      plugin,
      `import { readFileSync, writeFileSync } from 'node:fs';
const n = Number(readFileSync(${JSON.stringify(counter)}, 'utf8')) + 1;
writeFileSync(${JSON.stringify(counter)}, String(n));
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'exec-' + n } }));
`,
    );
    const file = kubeconfig('exec.kubeconfig', server.url, {
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: process.execPath,
        args: [plugin],
        interactiveMode: 'Never',
      },
    });
    client = await KubeClient.load(
      { kubeconfig: file, allowExec: true },
      { env: {}, cwd: dir },
      { exec: { env: { PATH: process.env['PATH'] ?? '' } } },
    );
    const response = await client.send({ method: 'GET', path: '/version' });
    expect(response).toEqual({ status: 200, body: { ok: 'exec-2' } });
    expect(server.requests.map((request) => request.bearer)).toEqual(['exec-1', 'exec-2']);
    // Cached until it expires or is refused: the next request runs no plugin.
    await client.send({ method: 'GET', path: '/version' });
    expect(readFileSync(counter, 'utf8')).toBe('2');
  });
});

/** An API server for one collection: lists answer from `list`, watches from `watches` in turn. */
function collectionServer(script: {
  list: (at: number) => unknown;
  watches: Array<(res: ServerResponse) => void>;
}): TestHandler {
  let lists = 0;
  let watches = 0;
  return (request, _req, res) => {
    if (request.url.includes('watch=1')) {
      const next = script.watches[watches++];
      if (next === undefined) {
        // Nothing more to say: a watch that stays open (the test ends before).
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        return;
      }
      next(res);
      return;
    }
    json(res, 200, script.list(lists++));
  };
}

const item = (name: string, resourceVersion: string) => ({ metadata: { name, resourceVersion } });
const event = (type: string, object: unknown) => `${JSON.stringify({ type, object })}\n`;

describe('listAndWatch through the client', () => {
  it('a watch silent past the idle deadline is reopened from the last resourceVersion it saw', async () => {
    server = await startHttpsServer({
      ca,
      handler: collectionServer({
        list: () => ({ metadata: { resourceVersion: '5' }, items: [item('a', '4')] }),
        watches: [
          (res) => {
            // One event, then silence on an open connection: a dead proxy, a stuck API server.
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write(event('MODIFIED', item('a', '7')));
          },
          (res) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write(event('ADDED', item('b', '8')));
          },
        ],
      }),
    });
    client = KubeClient.static({ server: server.url, caPem: ca.cert }, { kind: 'token', token: 't' });
    const kube = client;
    const stop = new AbortController();
    const seen: string[] = [];
    await listAndWatch<{ metadata: { name: string } }>({
      send: kube.send,
      stream: (path, onChunk, options) => kube.stream(path, onChunk, options),
      path: '/apis/g/v1/namespaces/n/things',
      signal: stop.signal,
      timeoutSeconds: 60,
      idleMs: 300,
      onEvent: async (type, object) => {
        seen.push(`${type} ${object.metadata.name}`);
        if (object.metadata.name === 'b') stop.abort();
      },
    });
    expect(seen).toEqual(['ADDED a', 'MODIFIED a', 'ADDED b']);
    expect(server.requests.map((request) => request.url)).toEqual([
      '/apis/g/v1/namespaces/n/things',
      '/apis/g/v1/namespaces/n/things?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=5',
      '/apis/g/v1/namespaces/n/things?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=7',
    ]);
  });

  it('a 410 (as the watch answer, or as an ERROR event) lists again, page by page', async () => {
    server = await startHttpsServer({
      ca,
      handler: collectionServer({
        list: (at) =>
          at === 0
            ? { metadata: { resourceVersion: '10', continue: 'page-2' }, items: [item('a', '9')] }
            : at === 1
              ? { metadata: { resourceVersion: '10' }, items: [item('b', '9')] }
              : { metadata: { resourceVersion: '20' }, items: [item('c', '19')] },
        watches: [
          (res) => json(res, 410, { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' }),
          (res) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(event('ERROR', { kind: 'Status', code: 410, message: 'too old resource version' }));
          },
        ],
      }),
    });
    client = KubeClient.static({ server: server.url, caPem: ca.cert }, { kind: 'none' });
    const kube = client;
    const stop = new AbortController();
    const seen: string[] = [];
    await listAndWatch<{ metadata: { name: string } }>({
      send: kube.send,
      stream: (path, onChunk, options) => kube.stream(path, onChunk, options),
      path: '/x',
      signal: stop.signal,
      pageSize: 1,
      timeoutSeconds: 60,
      onEvent: async (type, object) => {
        seen.push(`${type} ${object.metadata.name}`);
        if (seen.length === 4) stop.abort();
      },
    });
    expect(seen).toEqual(['ADDED a', 'ADDED b', 'ADDED c', 'ADDED c']);
    expect(server.requests.map((request) => request.url)).toEqual([
      '/x?limit=1',
      '/x?limit=1&continue=page-2',
      '/x?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=10',
      '/x?limit=1',
      '/x?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=20',
      '/x?limit=1',
    ]);
  });
});
