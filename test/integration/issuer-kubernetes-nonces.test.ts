/**
 * The Kubernetes state's nonces against a local HTTPS server that answers like an API server and records every call:
 * issuing a nonce calls nothing; a nonce that is forged, altered, another consumer's, expired or malformed is refused
 * without a call; spending is one create of `issuer-spent-<id>` (201 spends, 409 is a reuse, a quota 403 is busy).
 * The same class against a real API server, with replicas: test/e2e/issuer-replicas.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadKubeAccess } from '../../src/kube/kubeconfig-loader.js';
import { StateConnection } from '../../src/issuer/state/kubernetes/connection.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { KubernetesNonces, LABEL_EXPIRES, LABEL_NONCE_STATE } from '../../src/issuer/state/kubernetes/nonce-book.js';
import { NONCE_KEY_BYTES, NonceSeal } from '../../src/issuer/state/kubernetes/sealed-nonces.js';
import { rejection } from '../helpers/errors.js';
import { frozenClock } from '../helpers/issuer-fixtures.js';
import { createTestCa, startHttpsServer, type TestHttpsServer } from '../helpers/tls.js';

let dir: string;
let api: TestHttpsServer;
let conn: StateConnection;
/** Names created so far (the fake API server's store); `quota` makes every create a quota refusal. */
const created = new Map<string, { labels: Record<string, string> }>();
let quota = false;
const seal = new NonceSeal(randomBytes(NONCE_KEY_BYTES));
const clock = frozenClock();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-kube-nonces-'));
  const ca = await createTestCa('kube-nonces-api');
  api = await startHttpsServer({
    ca,
    handler: (request, req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const answer = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        };
        if (request.method !== 'POST' || request.url !== '/api/v1/namespaces/ns/configmaps')
          return answer(405, { kind: 'Status', code: 405 });
        if (quota)
          return answer(403, {
            kind: 'Status',
            code: 403,
            reason: 'Forbidden',
            message: 'configmaps "x" is forbidden: exceeded quota: q, requested: count/configmaps=1',
          });
        const object = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          metadata: { name: string; labels: Record<string, string> };
        };
        if (created.has(object.metadata.name))
          return answer(409, {
            kind: 'Status',
            code: 409,
            reason: 'AlreadyExists',
            message: 'configmaps already exists',
          });
        created.set(object.metadata.name, { labels: object.metadata.labels });
        answer(201, object);
      });
    },
  });
  const kubeconfig = join(dir, 'kubeconfig');
  await writeFile(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'p',
          cluster: { server: api.url, 'certificate-authority-data': Buffer.from(ca.cert).toString('base64') },
        },
      ],
      users: [{ name: 'issuer', user: { token: 'kube-nonces-test-token' } }],
      contexts: [{ name: 'p', context: { cluster: 'p', user: 'issuer' } }],
      'current-context': 'p',
    }),
    { mode: 0o600 },
  );
  conn = new StateConnection(
    KubeClient.fromAccess(await loadKubeAccess({ kubeconfig }, { env: {}, cwd: dir }), undefined, {
      timeoutMs: 10_000,
    }),
  );
});
afterAll(async () => {
  await conn.close();
  await api.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  api.requests.length = 0;
  quota = false;
});

describe('Kubernetes state nonces: one write per handshake', () => {
  it('issuing calls nothing; spending is one create of issuer-spent-<id>, labelled for the collector', async () => {
    const book = new KubernetesNonces(conn, 'ns', seal);
    const issued = await book.issue('c1', 60_000, clock.now(), {
      durable: true,
      request: { key: 'c1 t', untilMs: clock.now().getTime() + 300_000 },
    });
    expect(api.requests).toHaveLength(0);
    await book.take(issued.nonce, 'c1', clock.now());
    expect(api.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['POST /api/v1/namespaces/ns/configmaps']);
    const [name, object] = [...created.entries()].at(-1)!;
    expect(name).toMatch(/^issuer-spent-[0-9a-f]{40}$/);
    expect(object.labels).toMatchObject({
      'credentials.clusterprofile.io/issuer-state': 'nonce',
      [LABEL_NONCE_STATE]: 'spent',
    });
    // Collectable a minute after the nonce expires (clocks of replicas may disagree that much).
    expect(Number(object.labels[LABEL_EXPIRES])).toBe(Math.ceil((issued.expiresAt.getTime() + 60_000) / 1000));
  });

  it('a replayed Tenant (the create answers 409 AlreadyExists) is ERR_TENANT_NONCE_REUSED, also at another replica', async () => {
    const a = new KubernetesNonces(conn, 'ns', seal);
    const b = new KubernetesNonces(conn, 'ns', seal);
    const { nonce } = await a.issue('c1', 60_000, clock.now(), { durable: false });
    await b.take(nonce, 'c1', clock.now());
    expect((await rejection(a.take(nonce, 'c1', clock.now()))).code).toBe('ERR_TENANT_NONCE_REUSED');
    expect((await rejection(b.take(nonce, 'c1', clock.now()))).code).toBe('ERR_TENANT_NONCE_REUSED');
    expect(api.requests).toHaveLength(3);
  });

  it("forged, altered, another key's, another consumer's, expired or malformed: refused with its code before any call", async () => {
    const book = new KubernetesNonces(conn, 'ns', seal);
    const { nonce } = await book.issue('c1', 60_000, clock.now(), { durable: false });
    const altered = Buffer.from(nonce, 'base64');
    altered[40]! ^= 0xff;
    const foreign = new NonceSeal(randomBytes(NONCE_KEY_BYTES)).seal('c1', clock.now().getTime() + 60_000).nonce;
    const cases: Array<[string, string, Date, string]> = [
      [altered.toString('base64'), 'c1', clock.now(), 'ERR_TENANT_NONCE_UNKNOWN'],
      [foreign, 'c1', clock.now(), 'ERR_TENANT_NONCE_UNKNOWN'],
      [nonce.slice(0, 40), 'c1', clock.now(), 'ERR_TENANT_NONCE_UNKNOWN'],
      ['not a nonce', 'c1', clock.now(), 'ERR_TENANT_NONCE_UNKNOWN'],
      [nonce, 'c2', clock.now(), 'ERR_TENANT_NONCE_WRONG_CONSUMER'],
      [nonce, 'c1', new Date(clock.now().getTime() + 60_000), 'ERR_TENANT_NONCE_EXPIRED'],
    ];
    for (const [bad, consumer, at, code] of cases) {
      expect((await rejection(book.take(bad, consumer, at))).code).toBe(code);
    }
    expect(api.requests).toHaveLength(0);
    // None of that spent it: its consumer still can, once.
    await book.take(nonce, 'c1', clock.now());
    expect(api.requests).toHaveLength(1);
  });

  it('a ResourceQuota that is exhausted: ERR_ISSUER_BUSY (retryable), and the nonce is not spent', async () => {
    const book = new KubernetesNonces(conn, 'ns', seal);
    const { nonce } = await book.issue('c1', 60_000, clock.now(), { durable: false });
    quota = true;
    const busy = await rejection(book.take(nonce, 'c1', clock.now()));
    expect(busy.code).toBe('ERR_ISSUER_BUSY');
    expect(busy.retryable).toBe(true);
    quota = false;
    await book.take(nonce, 'c1', clock.now());
  });

  it("outstanding nonces are this replica's: issued by it, unexpired, not spent at it (oldest first)", async () => {
    const a = new KubernetesNonces(conn, 'ns', seal);
    const b = new KubernetesNonces(conn, 'ns', seal);
    const first = await a.issue('c1', 60_000, clock.now(), { durable: false });
    const second = await a.issue('c1', 120_000, clock.now(), { durable: false });
    const short = await a.issue('c2', 10_000, clock.now(), { durable: false });
    expect(await a.outstanding('c1', clock.now())).toEqual([first.nonce, second.nonce]);
    expect(await a.count(clock.now())).toBe(3);
    expect(await b.count(clock.now())).toBe(0);
    await a.take(first.nonce, 'c1', clock.now());
    expect(await a.outstanding('c1', clock.now())).toEqual([second.nonce]);
    // Spent at another replica: this one cannot know (a replica's own figure), the nonce is spent all the same.
    await b.take(short.nonce, 'c2', clock.now());
    expect(await a.count(clock.now())).toBe(2);
    expect((await rejection(a.take(short.nonce, 'c2', clock.now()))).code).toBe('ERR_TENANT_NONCE_REUSED');
    expect(await a.count(new Date(clock.now().getTime() + 60_000))).toBe(1);
    expect(await a.outstanding('c1', new Date(clock.now().getTime() + 120_000))).toEqual([]);
  });
});
