/**
 * The issuer's state backends through the real `clusterprofile issuer serve` process: flag combinations, the replay
 * memory of the data dir across a restart, and the Kubernetes backend against API servers that are down, refuse,
 * race it to the CA Secret or hold a damaged one (a local HTTPS server speaking the few Secret calls the start-up
 * makes; the full backend runs against a real API server in test/e2e/issuer-replicas.test.ts).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { freePort } from '../helpers/controlplane.js';
import { cli, issuerClient, nonceRequest, serveIssuer, startIssuerProcess } from '../helpers/issuer-process.js';
import { createTestCa, startHttpsServer, type TestCa, type TestHttpsServer } from '../helpers/tls.js';
import { createCertificateAuthority } from '../../src/issuer/certificates.js';
import { generateClusterKeyPair } from '../../src/wire/tenant-cert/keys.js';

let dir: string;
let apiCa: TestCa;
const TOKEN = 'issuer-state-token-never-printed';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-issuer-state-'));
  apiCa = await createTestCa('issuer-state-api');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function kubeconfigFor(server: string, name: string): Promise<string> {
  const file = join(dir, `${name}.kubeconfig`);
  await writeFile(
    file,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'p', cluster: { server, 'certificate-authority-data': Buffer.from(apiCa.cert).toString('base64') } },
      ],
      users: [{ name: 'issuer', user: { token: TOKEN } }],
      contexts: [{ name: 'p', context: { cluster: 'p', user: 'issuer', namespace: 'issuer-ns' } }],
      'current-context': 'p',
    }),
    { mode: 0o600 },
  );
  return file;
}

const serveArgs = (kubeconfig: string) => [
  'issuer',
  'serve',
  '--state',
  'kubernetes',
  '--kubeconfig',
  kubeconfig,
  '--listen',
  '127.0.0.1:0',
  '--cluster-id',
  'p1',
];

function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1) ?? '';
}

describe('issuer serve: state flags', () => {
  it.each([
    [['--cluster-id', 'p1'], '--data-dir', /needs --data-dir/],
    [
      ['--state', 'kubernetes', '--data-dir', 'x', '--cluster-id', 'p1'],
      '--data-dir',
      /--data-dir goes with --state data-dir/,
    ],
    [
      ['--data-dir', 'x', '--namespace', 'ns', '--cluster-id', 'p1'],
      '--namespace',
      /--namespace goes with --state kubernetes/,
    ],
    [['--state', 'kubernetes', '--tls-cert-file', 'a.crt', '--cluster-id', 'p1'], '--tls-key-file', /go together/],
  ])('%j is a usage error (exit 2) naming %s', async (args, _flag, message) => {
    const result = await cli(['issuer', 'serve', ...args], { cwd: dir });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^ERR_USAGE: /m);
    expect(result.stderr).toMatch(message);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('a namespace that is no DNS label is a usage error before anything is sent', async () => {
    const api = await startHttpsServer({ ca: apiCa });
    try {
      const result = await cli([...serveArgs(await kubeconfigFor(api.url, 'ns')), '--namespace', 'Not_A_Namespace']);
      expect(result.code).toBe(2);
      expect(lastLine(result.stderr)).toMatch(/^ERR_USAGE: --namespace "Not_A_Namespace" is not a namespace name/);
      expect(api.requests).toHaveLength(0);
    } finally {
      await api.close();
    }
  });
});

describe('issuer serve --state data-dir: the replay memory', () => {
  it('a captured nonce request is refused after a restart too (it was answered before the restart)', async () => {
    const dataDir = join(dir, 'replay-data');
    const pair = generateClusterKeyPair('ed25519');
    const keyFile = join(dir, 'replay.pub');
    await writeFile(keyFile, pair.publicKeyPem);
    expect(
      (await cli(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', 'c1', '--public-key', keyFile])).code,
    ).toBe(0);
    const captured = nonceRequest(createPrivateKey(pair.privateKeyPem), 'c1', 'p1');
    const first = await serveIssuer(dataDir, 'p1');
    const http = issuerClient(first);
    expect((await http.call('POST', '/v1/nonces', captured)).status).toBe(201);
    await http.close();
    expect(await first.stop()).toBe(0);

    const second = await serveIssuer(dataDir, 'p1');
    const again = issuerClient(second);
    try {
      expect(await again.call('POST', '/v1/nonces', captured)).toMatchObject({
        status: 403,
        body: { code: 'ERR_TENANT_NONCE_REQUEST_REPLAYED' },
      });
      // A fresh request of the same consumer is answered.
      expect(
        (await again.call('POST', '/v1/nonces', nonceRequest(createPrivateKey(pair.privateKeyPem), 'c1', 'p1'))).status,
      ).toBe(201);
    } finally {
      await again.close();
      await second.stop();
    }
  });
});

describe('issuer serve --state kubernetes: an API server that is down, refuses, races or holds a damaged CA', () => {
  let api: TestHttpsServer | undefined;
  afterAll(async () => api?.close());

  it('down: ERR_ISSUER_STATE_UNAVAILABLE (exit 1), coded, no stack, no token', async () => {
    const kubeconfig = await kubeconfigFor(`https://127.0.0.1:${await freePort()}`, 'down');
    const result = await cli(serveArgs(kubeconfig));
    expect(result.code).toBe(1);
    expect(lastLine(result.stderr)).toMatch(
      /^ERR_ISSUER_STATE_UNAVAILABLE: reading the secret issuer-ns\/clusterprofile-issuer-client-ca: cannot reach the API server/,
    );
    expect(result.stderr).not.toContain(TOKEN);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  it('refusing (403): ERR_ISSUER_STATE_FORBIDDEN naming the RBAC to grant', async () => {
    api = await startHttpsServer({
      ca: apiCa,
      handler: (_request, _req, res) => {
        res.writeHead(403, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            status: 'Failure',
            reason: 'Forbidden',
            code: 403,
            message: 'secrets "clusterprofile-issuer-client-ca" is forbidden',
          }),
        );
      },
    });
    const result = await cli(serveArgs(await kubeconfigFor(api.url, 'forbidden')));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /ERR_ISSUER_STATE_FORBIDDEN: reading the secret issuer-ns\/clusterprofile-issuer-client-ca: the API server answered 403 \(secrets "clusterprofile-issuer-client-ca" is forbidden\)/,
    );
    expect(result.stderr).toContain('deploy/base/issuer-state-rbac.yaml');
    expect(api.requests[0]?.bearer).toBe(TOKEN);
    await api.close();
    api = undefined;
  });

  it("losing the race to create a CA or nonce key Secret (409 AlreadyExists): the winner's is used, nothing is overwritten", async () => {
    const now = new Date();
    const winners: Record<string, { certificatePem: string; keyPem: string }> = {
      'clusterprofile-issuer-client-ca': createCertificateAuthority('winner client CA', now, 86_400_000),
      'clusterprofile-issuer-serving-ca': createCertificateAuthority('winner serving CA', now, 86_400_000),
      // The nonce key's Secret (answered below: it holds a key, not a CA).
      'clusterprofile-issuer-nonce-key': { certificatePem: '', keyPem: '' },
    };
    const created = new Set<string>();
    api = await startHttpsServer({
      ca: apiCa,
      handler: (request, req, res) => {
        const name = request.url.split('/').at(-1) ?? '';
        const answer = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        req.resume();
        if (request.method === 'GET' && winners[name] !== undefined) {
          // The first read finds nothing; by the time this replica creates, another one has.
          if (!created.has(name)) {
            created.add(name);
            return answer(404, {
              kind: 'Status',
              code: 404,
              reason: 'NotFound',
              message: `secrets "${name}" not found`,
            });
          }
          if (name === 'clusterprofile-issuer-nonce-key') {
            return answer(200, {
              kind: 'Secret',
              metadata: { name, annotations: { 'credentials.clusterprofile.io/provider-cluster-id': 'p1' } },
              type: 'Opaque',
              data: { key: Buffer.alloc(32, 7).toString('base64') },
            });
          }
          const winner = winners[name]!;
          return answer(200, {
            kind: 'Secret',
            metadata: { name, annotations: { 'credentials.clusterprofile.io/provider-cluster-id': 'p1' } },
            type: 'kubernetes.io/tls',
            data: {
              'tls.crt': Buffer.from(winner.certificatePem).toString('base64'),
              'tls.key': Buffer.from(winner.keyPem).toString('base64'),
            },
          });
        }
        if (request.method === 'POST' && request.url.endsWith('/secrets')) {
          return answer(409, { kind: 'Status', code: 409, reason: 'AlreadyExists', message: 'secrets already exists' });
        }
        answer(405, { kind: 'Status', code: 405, message: `${request.method} ${request.url} not expected` });
      },
    });
    const issuer = await startIssuerProcess(serveArgs(await kubeconfigFor(api.url, 'race')).slice(2));
    try {
      // The HTTPS certificate chains to the winner's serving CA.
      const http = issuerClient({
        url: issuer.url,
        dataDir: '',
        ca: winners['clusterprofile-issuer-serving-ca']!.certificatePem,
      });
      expect((await http.call('GET', '/healthz')).status).toBe(200);
      await http.close();
      expect(api.requests.map((r) => `${r.method} ${r.url.split('/').slice(-2).join('/')}`)).toEqual([
        'GET secrets/clusterprofile-issuer-client-ca',
        'POST issuer-ns/secrets',
        'GET secrets/clusterprofile-issuer-client-ca',
        'GET secrets/clusterprofile-issuer-serving-ca',
        'POST issuer-ns/secrets',
        'GET secrets/clusterprofile-issuer-serving-ca',
        'GET secrets/clusterprofile-issuer-nonce-key',
        'POST issuer-ns/secrets',
        'GET secrets/clusterprofile-issuer-nonce-key',
      ]);
      expect(new X509Certificate(winners['clusterprofile-issuer-client-ca']!.certificatePem).subject).toBe(
        'CN=winner client CA',
      );
    } finally {
      await issuer.stop();
      await api.close();
      api = undefined;
    }
  });

  it('a CA Secret without its key: ERR_ISSUER_STATE_CORRUPT, never replaced', async () => {
    api = await startHttpsServer({
      ca: apiCa,
      handler: (request, _req, res) => {
        res.writeHead(request.method === 'GET' ? 200 : 405, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Secret',
            metadata: { name: 'x', annotations: { 'credentials.clusterprofile.io/provider-cluster-id': 'p1' } },
            data: { 'tls.crt': 'AAAA' },
          }),
        );
      },
    });
    const result = await cli(serveArgs(await kubeconfigFor(api.url, 'corrupt')));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^ERR_ISSUER_STATE_CORRUPT: the secret issuer-ns\/clusterprofile-issuer-client-ca lacks tls.crt or tls.key/,
    );
    expect(api.requests.map((r) => r.method)).toEqual(['GET']);
  });

  it('a nonce key Secret without a 32-byte key: ERR_ISSUER_STATE_CORRUPT, never replaced', async () => {
    const now = new Date();
    const cas: Record<string, { certificatePem: string; keyPem: string }> = {
      'clusterprofile-issuer-client-ca': createCertificateAuthority('client CA', now, 86_400_000),
      'clusterprofile-issuer-serving-ca': createCertificateAuthority('serving CA', now, 86_400_000),
    };
    api = await startHttpsServer({
      ca: apiCa,
      handler: (request, _req, res) => {
        const name = request.url.split('/').at(-1) ?? '';
        const ca = cas[name];
        res.writeHead(request.method === 'GET' ? 200 : 405, { 'content-type': 'application/json' });
        const metadata = { name, annotations: { 'credentials.clusterprofile.io/provider-cluster-id': 'p1' } };
        res.end(
          JSON.stringify(
            ca === undefined
              ? { kind: 'Secret', metadata, data: { key: Buffer.alloc(16).toString('base64') } }
              : {
                  kind: 'Secret',
                  metadata,
                  data: {
                    'tls.crt': Buffer.from(ca.certificatePem).toString('base64'),
                    'tls.key': Buffer.from(ca.keyPem).toString('base64'),
                  },
                },
          ),
        );
      },
    });
    const result = await cli(serveArgs(await kubeconfigFor(api.url, 'key')));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^ERR_ISSUER_STATE_CORRUPT: the secret issuer-ns\/clusterprofile-issuer-nonce-key holds no 32-byte key/m,
    );
    expect(result.stderr).not.toContain(Buffer.alloc(16).toString('base64'));
    expect(api.requests.map((r) => r.method)).toEqual(['GET', 'GET', 'GET']);
    await api.close();
    api = undefined;
  });

  it('a CA Secret of another provider: the namespace is refused (ERR_ISSUER_CONFIG)', async () => {
    await api?.close();
    api = await startHttpsServer({
      ca: apiCa,
      handler: (_request, _req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            kind: 'Secret',
            metadata: { name: 'x', annotations: { 'credentials.clusterprofile.io/provider-cluster-id': 'other' } },
            data: {},
          }),
        );
      },
    });
    const result = await cli(serveArgs(await kubeconfigFor(api.url, 'other')));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /ERR_ISSUER_CONFIG: the secret issuer-ns\/clusterprofile-issuer-client-ca belongs to provider other, not p1/,
    );
  });
});
