/**
 * Issuer replicas on the Kubernetes state backend, on the real control plane: `clusterprofile issuer serve --state
 * kubernetes` processes (our built bin) run with a token of exactly the ServiceAccount of
 * deploy/base/issuer-state-rbac.yaml (TokenRequest by the test's admin) and share one namespace. A nonce from one
 * replica is good at another, once, also after the replica that issued it stopped; a replica SIGKILLed in the middle of a
 * handshake burst costs no consumer its certificate (the consumers fail over to the other replica in the test's loop:
 * the plugin takes one issuer URL); an API server that cannot be reached is a coded, retryable 503.
 */
import { X509Certificate, createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { isCredentialsError } from '../../src/base/errors.js';
import { loadKubeAccess } from '../../src/kube/kubeconfig-loader.js';
import { issuerHandshake } from '../../src/providers/tenant-cert/consumer/handshake.js';
import { StateConnection } from '../../src/issuer/state/kubernetes/connection.js';
import { KubeClient } from '../../src/kube/kube-client.js';
import { KubernetesNonces } from '../../src/issuer/state/kubernetes/nonce-book.js';
import { LABEL_KIND } from '../../src/issuer/state/kubernetes/objects.js';
import { NONCE_KEY_BYTES, NonceSeal } from '../../src/issuer/state/kubernetes/sealed-nonces.js';
import { buildCsr, type BuiltCsr } from '../../src/wire/tenant-cert/csr.js';
import { generateClusterKeyPair } from '../../src/wire/tenant-cert/keys.js';
import { signNonceRequest } from '../../src/wire/tenant-cert/message.js';
import { e2eContext, kubectl, tempFile, tokenKubeconfig } from '../helpers/controlplane-e2e.js';
import { tenantWithCsr } from '../helpers/issuer-fixtures.js';
import { createTestCa } from '../helpers/tls.js';
import {
  cli,
  issuerClient,
  startIssuerProcess,
  type IssuerClient,
  type IssuerProcess,
} from '../helpers/issuer-process.js';
import { adminKubectl, templatedManifest } from './fixtures/tenant-cert-issuer.js';

const NS = 'issuer-replicas';
const PROVIDER = 'provider-replicas';
const started: IssuerProcess[] = [];
const clients: IssuerClient[] = [];
let saKubeconfig: string;
let servingCaPem: string;
let clientCaPem: string;

interface Consumer {
  id: string;
  key: KeyObject;
  csr: BuiltCsr;
}
const consumers = new Map<string, Consumer>();

async function consumer(id: string): Promise<Consumer> {
  const pair = generateClusterKeyPair('ed25519');
  const key = createPrivateKey(pair.privateKeyPem);
  const publicKeyFile = await tempFile(`${id}.pub`, pair.publicKeyPem);
  const { controlPlane } = e2eContext();
  // The admin writes trust records (the issuer's ServiceAccount only reads them).
  const trusted = await cli([
    'issuer',
    'trust',
    '--state',
    'kubernetes',
    '--namespace',
    NS,
    '--kubeconfig',
    controlPlane.adminKubeconfig,
    '--cluster-id',
    id,
    '--public-key',
    publicKeyFile,
  ]);
  expect(trusted.stderr).toBe('');
  expect(trusted.code).toBe(0);
  const made = { id, key, csr: await buildCsr(key, { commonName: id }) };
  consumers.set(id, made);
  return made;
}

/** A replica: the real bin, with the ServiceAccount's token and nothing else. */
async function replica(extra: readonly string[] = [], kubeconfig = saKubeconfig): Promise<IssuerProcess> {
  const issuer = await startIssuerProcess([
    '--state',
    'kubernetes',
    '--namespace',
    NS,
    '--kubeconfig',
    kubeconfig,
    '--listen',
    '127.0.0.1:0',
    '--cluster-id',
    PROVIDER,
    ...extra,
  ]);
  started.push(issuer);
  return issuer;
}

function client(issuer: IssuerProcess): IssuerClient {
  const made = issuerClient({ url: issuer.url, dataDir: '', ca: servingCaPem });
  clients.push(made);
  return made;
}

const nonceRequest = (c: Consumer, at = new Date()) =>
  signNonceRequest(c.key, { consumerClusterID: c.id, providerClusterID: PROVIDER }, at);
const tenant = (c: Consumer, nonce: string) => tenantWithCsr(c.key, c.id, nonce, c.csr.der, PROVIDER);

async function secretCertificate(name: string): Promise<string> {
  const secret = JSON.parse(await adminKubectl(['-n', NS, 'get', 'secret', name, '-o', 'json'])) as {
    data: Record<string, string>;
  };
  return Buffer.from(secret.data['tls.crt'] ?? '', 'base64').toString('utf8');
}

async function nonceObjects(): Promise<Array<{ metadata: { labels: Record<string, string> } }>> {
  const list = JSON.parse(
    await adminKubectl(['-n', NS, 'get', 'configmaps', '-l', `${LABEL_KIND}=nonce`, '-o', 'json']),
  ) as { items: Array<{ metadata: { labels: Record<string, string> } }> };
  return list.items;
}

beforeAll(async () => {
  await adminKubectl(['create', 'namespace', NS]);
  // The shipped RBAC, in this test's namespace.
  await adminKubectl(
    ['apply', '-f', '-'],
    await templatedManifest('deploy/base/issuer-state-rbac.yaml', [['clusterprofile-system', NS]]),
  );
  const token = (await adminKubectl(['-n', NS, 'create', 'token', 'clusterprofile-issuer', '--duration', '1h'])).trim();
  saKubeconfig = await tokenKubeconfig('issuer-replicas', token);
  // Two replicas starting together: one creates each CA Secret, the other reads the winner's.
  const [a, b] = await Promise.all([replica(), replica()]);
  servingCaPem = await secretCertificate('clusterprofile-issuer-serving-ca');
  clientCaPem = await secretCertificate('clusterprofile-issuer-client-ca');
  expect(a!.url).not.toBe(b!.url);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(started.map((issuer) => issuer.stop()));
  await adminKubectl(['delete', 'namespace', NS, '--wait=false']).catch(() => undefined);
});

describe('issuer replicas on --state kubernetes', () => {
  it('the ServiceAccount of the shipped Role may do nothing beyond its namespace and verbs', async () => {
    const can = async (...args: string[]) => (await kubectl(saKubeconfig, ['auth', 'can-i', ...args])).stdout.trim();
    expect(await can('create', 'configmaps', '-n', NS)).toBe('yes');
    // Spending a nonce is a create: nothing is ever changed.
    expect(await can('patch', 'configmaps', '-n', NS)).toBe('no');
    expect(await can('update', 'configmaps', '-n', NS)).toBe('no');
    expect(await can('get', 'secrets', '-n', NS)).toBe('no');
    expect(await can('get', 'secrets/clusterprofile-issuer-client-ca', '-n', NS)).toBe('yes');
    expect(await can('get', 'secrets/clusterprofile-issuer-nonce-key', '-n', NS)).toBe('yes');
    expect(await can('list', 'configmaps', '-n', 'default')).toBe('no');
    expect(await can('create', 'certificatesigningrequests')).toBe('no');
  });

  it("a nonce from replica A is good at replica B, once; the Tenant replayed at A is refused; the nonce request replayed at B obtains only a nonce the consumer's key alone can use", async () => {
    const [a, b] = started as [IssuerProcess, IssuerProcess];
    const c = await consumer('consumer-ab');
    const signed = nonceRequest(c);
    const nonce = await client(a).call('POST', '/v1/nonces', signed);
    expect(nonce.status).toBe(201);
    const identity = await client(b).call('POST', '/v1/tenants', tenant(c, nonce.body.nonce));
    expect(identity.status).toBe(201);
    const certificate = new X509Certificate(
      Buffer.from(identity.body.spec.authParams.signedCRT, 'base64').toString('utf8'),
    );
    expect(certificate.subject).toBe(`CN=${c.id}`);
    expect(certificate.verify(new X509Certificate(clientCaPem).publicKey)).toBe(true);

    const replayed = await client(a).call('POST', '/v1/tenants', tenant(c, nonce.body.nonce));
    expect(replayed).toMatchObject({ status: 403, body: { code: 'ERR_TENANT_NONCE_REUSED' } });
    // Nonces are sealed, not stored: a replayed request is answered (the data dir refuses it) with another nonce of
    // the same consumer. Signed with any key but the consumer's, its Tenant is refused (and the nonce spent).
    const requestAgain = await client(b).call('POST', '/v1/nonces', signed);
    expect(requestAgain.status).toBe(201);
    expect(requestAgain.body.nonce).not.toBe(nonce.body.nonce);
    const intruder = generateClusterKeyPair('ed25519');
    const forged = tenantWithCsr(
      createPrivateKey(intruder.privateKeyPem),
      c.id,
      requestAgain.body.nonce,
      c.csr.der,
      PROVIDER,
    );
    expect(await client(a).call('POST', '/v1/tenants', forged)).toMatchObject({
      status: 403,
      body: { code: 'ERR_TENANT_KEY_NOT_TRUSTED' },
    });
    expect(await client(b).call('POST', '/v1/tenants', tenant(c, nonce.body.nonce))).toMatchObject({
      status: 403,
      body: { code: 'ERR_TENANT_NONCE_REUSED' },
    });
    // A nonce of another consumer spends nothing of its owner's.
    const other = await consumer('consumer-other');
    const foreign = await client(a).call('POST', '/v1/nonces', nonceRequest(other));
    const wrong = await client(b).call('POST', '/v1/tenants', tenant(c, foreign.body.nonce));
    expect(wrong).toMatchObject({ status: 403, body: { code: 'ERR_TENANT_NONCE_WRONG_CONSUMER' } });
    expect((await client(a).call('POST', '/v1/tenants', tenant(other, foreign.body.nonce))).status).toBe(201);
  });

  it('the same Tenant sent to both replicas at once is answered once: one certificate per nonce', async () => {
    const [a, b] = started as [IssuerProcess, IssuerProcess];
    const c = await consumer('consumer-race');
    const ca = client(a);
    const cb = client(b);
    const rounds = await Promise.all(
      Array.from({ length: 12 }, async (_, index) => {
        const nonce = await (index % 2 === 0 ? ca : cb).call(
          'POST',
          '/v1/nonces',
          nonceRequest(c, new Date(Date.now() + index)),
        );
        expect(nonce.status).toBe(201);
        const document = tenant(c, nonce.body.nonce);
        return Promise.all([
          ca.call('POST', '/v1/tenants', document),
          cb.call('POST', '/v1/tenants', document),
          ca.call('POST', '/v1/tenants', document),
        ]);
      }),
    );
    for (const answers of rounds) {
      expect(answers.filter((answer) => answer.status === 201)).toHaveLength(1);
      expect(answers.filter((answer) => answer.status !== 201).map((answer) => answer.body.code)).toEqual([
        'ERR_TENANT_NONCE_REUSED',
        'ERR_TENANT_NONCE_REUSED',
      ]);
    }
  });

  it('issuer list/untrust --state kubernetes: an untrusted consumer is refused by every replica within a second', async () => {
    const [a, b] = started as [IssuerProcess, IssuerProcess];
    const { controlPlane } = e2eContext();
    const state = ['--state', 'kubernetes', '--namespace', NS, '--kubeconfig', controlPlane.adminKubeconfig];
    const c = await consumer('consumer-untrust');
    expect((await client(a).call('POST', '/v1/nonces', nonceRequest(c))).status).toBe(201);
    const listed = await cli(['issuer', 'list', ...state]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^consumer-untrust\ted25519\tSHA256:/m);
    const untrusted = await cli(['issuer', 'untrust', ...state, '--cluster-id', c.id]);
    expect(untrusted.code).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const replica of [a, b]) {
      const refused = await client(replica).call('POST', '/v1/nonces', nonceRequest(c, new Date(Date.now() + 7)));
      expect(refused).toMatchObject({ status: 403, body: { code: 'ERR_TENANT_UNKNOWN_CONSUMER' } });
    }
    expect((await cli(['issuer', 'untrust', ...state, '--cluster-id', c.id])).code).toBe(1);
  });

  it('--tls-cert-file/--tls-key-file: HTTPS with the certificate given (a mounted Secret), not one from the serving CA', async () => {
    const ca = await createTestCa('issuer-serving-secret');
    const pair = await ca.issueServerCert();
    const certFile = await tempFile('tls.crt', pair.cert);
    const keyFile = path.join(path.dirname(certFile), 'tls.key');
    await writeFile(keyFile, pair.key, { mode: 0o600 });
    const issuer = await replica(['--tls-cert-file', certFile, '--tls-key-file', keyFile]);
    const c = await consumer('consumer-tls');
    const viaSecret = issuerClient({ url: issuer.url, dataDir: '', ca: ca.cert });
    clients.push(viaSecret);
    expect((await viaSecret.call('POST', '/v1/nonces', nonceRequest(c))).status).toBe(201);
    expect(issuer.log()).toContain(`certificate ${certFile} for HTTPS`);
    await issuer.stop();
  });

  it('a nonce outlives the replica that issued it: spent at a replica started after it stopped, once (the key is in the Secret)', async () => {
    const c = await consumer('consumer-restart');
    const first = await replica();
    const nonce = await client(first).call('POST', '/v1/nonces', nonceRequest(c));
    expect(nonce.status).toBe(201);
    expect(await first.stop()).toBe(0);
    const again = await replica();
    expect((await client(again).call('POST', '/v1/tenants', tenant(c, nonce.body.nonce))).status).toBe(201);
    expect(await again.stop()).toBe(0);
    const third = await replica();
    expect(await client(third).call('POST', '/v1/tenants', tenant(c, nonce.body.nonce))).toMatchObject({
      status: 403,
      body: { code: 'ERR_TENANT_NONCE_REUSED' },
    });
    await third.stop();
  });

  it('a replica SIGKILLed in the middle of a handshake burst: every consumer gets its certificate from the other, and no nonce is spent twice', async () => {
    const [, b] = started as [IssuerProcess, IssuerProcess];
    const victim = await replica();
    const burst = await Promise.all(Array.from({ length: 16 }, (_, index) => consumer(`burst-${index}`)));
    const spentBefore = (await nonceObjects()).filter(
      (item) => item.metadata.labels['credentials.clusterprofile.io/nonce-state'] === 'spent',
    ).length;
    const served: Record<string, number> = { [victim.url]: 0, [b.url]: 0 };
    const failovers: string[] = [];
    const handshake = async (c: Consumer): Promise<X509Certificate> => {
      // The plugin takes one issuerURL: the failover between replicas is this loop's (a Service would do it).
      for (const url of [victim.url, b.url]) {
        try {
          const result = await issuerHandshake(
            {
              issuerURL: url,
              issuerCA: servingCaPem,
              timeoutMs: 20_000,
              requestTimeoutMs: 10_000,
              now: () => new Date(),
              maxAttempts: 2,
              initialBackoffMs: 50,
            },
            { consumerClusterID: c.id, providerClusterID: PROVIDER },
            { nonceRequest: (at) => nonceRequest(c, at), tenant: (nonce) => tenant(c, nonce.nonce) },
          );
          served[url] = (served[url] ?? 0) + 1;
          return new X509Certificate(Buffer.from(result.identity.spec.authParams.signedCRT, 'base64').toString('utf8'));
        } catch (error) {
          if (!(isCredentialsError(error) && error.retryable)) throw error;
          failovers.push(`${c.id}: ${error.code}`);
        }
      }
      throw new Error(`${c.id}: no replica answered`);
    };
    const killer = new Promise<void>((resolve) => {
      // Kill once the burst is under way at the victim.
      const timer = setInterval(() => {
        if ((victim.log().match(/certificate issued/g) ?? []).length >= 2) {
          clearInterval(timer);
          victim.child.kill('SIGKILL');
          resolve();
        }
      }, 5);
    });
    const certificates = await Promise.all(
      burst.map(async (c) => {
        const got: X509Certificate[] = [];
        // Three handshakes each, back to back: the kill lands in the middle of the burst.
        for (let round = 0; round < 3; round++) got.push(await handshake(c));
        return got;
      }),
    );
    await killer;
    const all = certificates.flat();
    expect(all).toHaveLength(burst.length * 3);
    for (const [index, got] of certificates.entries()) {
      for (const certificate of got) expect(certificate.subject).toBe(`CN=burst-${index}`);
    }
    expect(new Set(all.map((certificate) => certificate.serialNumber)).size).toBe(all.length);
    expect(served[b.url]).toBeGreaterThan(0);
    // Consumers whose handshake was at the victim when it died, or came after, went on at the other replica.
    expect(failovers.length).toBeGreaterThan(0);
    expect(failovers.every((line) => /ERR_TENANT_CERT_ISSUER_(UNREACHABLE|TIMEOUT|ERROR)/.test(line))).toBe(true);
    expect(victim.child.signalCode).toBe('SIGKILL');
    // Every certificate either replica issued (its log line, also the killed one's lines before the kill) spent a
    // nonce of its own: issued ≤ spent, and every certificate a consumer holds was issued.
    const issuedLogged =
      (victim.log().match(/certificate issued/g) ?? []).length +
      (b.log().match(/tenant burst-\d+: certificate issued/g) ?? []).length;
    const spentAfter = (await nonceObjects()).filter(
      (item) => item.metadata.labels['credentials.clusterprofile.io/nonce-state'] === 'spent',
    ).length;
    const spentNow = spentAfter - spentBefore;
    expect(issuedLogged).toBeGreaterThanOrEqual(all.length);
    expect(issuedLogged).toBeLessThanOrEqual(spentNow);
  }, 120_000);

  it('--liqo-compat: a Liqo-shaped Tenant (it names no nonce) is matched at a replica that did not issue its nonce, once', async () => {
    const [a, b] = await Promise.all([replica(['--liqo-compat']), replica(['--liqo-compat'])]);
    const pair = generateClusterKeyPair('ed25519');
    const keyFile = await tempFile('liqo-consumer.key', pair.privateKeyPem);
    const publicKeyFile = await tempFile('liqo-consumer.pub', pair.publicKeyPem);
    const { controlPlane } = e2eContext();
    const trusted = await cli([
      'issuer',
      'trust',
      '--state',
      'kubernetes',
      '--namespace',
      NS,
      '--kubeconfig',
      controlPlane.adminKubeconfig,
      '--cluster-id',
      'liqo-consumer',
      '--public-key',
      publicKeyFile,
    ]);
    expect(trusted.code).toBe(0);
    const key = createPrivateKey(pair.privateKeyPem);
    const nonce = await client(a).call(
      'POST',
      '/v1/nonces',
      signNonceRequest(key, { consumerClusterID: 'liqo-consumer', providerClusterID: PROVIDER }, new Date()),
    );
    expect(nonce.status).toBe(201);
    // The issued nonce is recorded for the other replicas (a second write, in this mode only).
    expect(
      (await nonceObjects()).filter(
        (item) => item.metadata.labels['credentials.clusterprofile.io/nonce-state'] === 'issued',
      ),
    ).toHaveLength(1);
    const generated = await cli([
      'tenant',
      'generate',
      '--liqo',
      '--key-file',
      keyFile,
      '--cluster-id',
      'liqo-consumer',
      '--provider-cluster-id',
      PROVIDER,
      '--nonce',
      nonce.body.nonce as string,
    ]);
    expect(generated.code).toBe(0);
    const liqoTenant = parse(generated.stdout) as { apiVersion: string; spec: Record<string, unknown> };
    expect(liqoTenant.apiVersion).toBe('authentication.liqo.io/v1beta1');
    const identity = await client(b!).call('POST', '/v1/tenants', liqoTenant);
    expect(identity).toMatchObject({
      status: 201,
      body: { apiVersion: 'authentication.liqo.io/v1beta1', kind: 'Identity' },
    });
    // The same Tenant again, at the replica that issued the nonce: spent.
    expect(await client(a!).call('POST', '/v1/tenants', liqoTenant)).toMatchObject({
      status: 403,
      body: { code: 'ERR_TENANT_NONCE_REUSED' },
    });
    await Promise.all([a!.stop(), b!.stop()]);
  }, 60_000);

  it('spent-nonce records are collected by any replica once their nonce expired, idempotently, with the ServiceAccount alone', async () => {
    const access = await loadKubeAccess({ kubeconfig: saKubeconfig }, { env: {}, cwd: '/' });
    const connections = [
      new StateConnection(KubeClient.fromAccess(access, undefined, { timeoutMs: 10_000 })),
      new StateConnection(KubeClient.fromAccess(access, undefined, { timeoutMs: 10_000 })),
    ];
    const books = connections.map(
      (conn) => new KubernetesNonces(conn, NS, new NonceSeal(randomBytes(NONCE_KEY_BYTES))),
    );
    const before = (await nonceObjects()).length;
    expect(before).toBeGreaterThan(0);
    // Now, nothing has expired: a collection selects nothing (live nonces are not even listed).
    expect(await books[0]!.collect(new Date())).toBe(0);
    expect(await nonceObjects()).toHaveLength(before);
    // Ten minutes on: every nonce has expired, with the records' minute of grace. Two collectors race; each object goes once.
    const later = new Date(Date.now() + 10 * 60_000);
    const deleted = await Promise.all(books.map((book) => book.collect(later)));
    expect(deleted[0]! + deleted[1]!).toBe(before);
    expect(await nonceObjects()).toHaveLength(0);
    expect(await books[0]!.collect(later, { sweep: true })).toBe(0);
    await Promise.all(connections.map((conn) => conn.close()));
  });

  it('an API server that cannot be reached: nonce requests and Tenants answer 503 ERR_ISSUER_STATE_UNAVAILABLE (retryable), /healthz stays up, and it recovers', async () => {
    const { controlPlane } = e2eContext();
    const target = new URL(controlPlane.server);
    // A TCP forwarder the test can cut: the issuer reaches the API server only through it.
    const sockets = new Set<Socket>();
    let open = true;
    const forwarder: Server = createServer((socket) => {
      if (!open) return socket.destroy();
      const upstream = connect(Number(target.port), target.hostname);
      sockets.add(socket).add(upstream);
      socket.pipe(upstream).pipe(socket);
      const drop = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
    });
    await new Promise<void>((resolve) => forwarder.listen(0, '127.0.0.1', resolve));
    const port = (forwarder.address() as { port: number }).port;
    const viaForwarder = parse(await (await import('node:fs/promises')).readFile(saKubeconfig, 'utf8')) as {
      clusters: Array<{ cluster: { server: string } }>;
    };
    viaForwarder.clusters[0]!.cluster.server = `https://127.0.0.1:${port}`;
    const file = path.join(path.dirname(saKubeconfig), 'via-forwarder.kubeconfig');
    await writeFile(file, stringify(viaForwarder), { mode: 0o600 });
    const issuer = await replica([], file);
    const c = await consumer('consumer-down');
    const http = client(issuer);
    try {
      const nonce = await http.call('POST', '/v1/nonces', nonceRequest(c));
      expect(nonce.status).toBe(201);

      open = false;
      for (const socket of sockets) socket.destroy();
      // Issuing a nonce writes nothing; it reads the trust record, which a replica reuses for a second.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const refusedNonce = await http.call('POST', '/v1/nonces', nonceRequest(c, new Date(Date.now() + 1)));
      expect(refusedNonce).toMatchObject({ status: 503, body: { code: 'ERR_ISSUER_STATE_UNAVAILABLE' } });
      const refusedTenant = await http.call('POST', '/v1/tenants', tenant(c, nonce.body.nonce));
      expect(refusedTenant).toMatchObject({ status: 503, body: { code: 'ERR_ISSUER_STATE_UNAVAILABLE' } });
      expect(JSON.stringify(refusedTenant.body)).not.toContain('127.0.0.1');
      expect((await http.call('GET', '/healthz')).status).toBe(200);

      open = true;
      // Nothing was half written: the nonce refused while the API server was away is still good.
      const identity = await http.call('POST', '/v1/tenants', tenant(c, nonce.body.nonce));
      expect(identity.status).toBe(201);
      expect(issuer.log()).toMatch(
        /tenant consumer-down: refused ERR_ISSUER_STATE_UNAVAILABLE: .*cannot reach the API server/,
      );
    } finally {
      await issuer.stop();
      await new Promise<void>((resolve) => forwarder.close(() => resolve()));
    }
  });

  // Last: the replicas started before keep the old key in memory.
  it('rotating the nonce key (the admin deletes its Secret, a replica starts): a nonce sealed with the old key is ERR_TENANT_NONCE_UNKNOWN there, new ones work', async () => {
    const [a] = started as [IssuerProcess];
    const c = await consumer('consumer-rotate');
    const old = await client(a).call('POST', '/v1/nonces', nonceRequest(c));
    expect(old.status).toBe(201);
    await adminKubectl(['-n', NS, 'delete', 'secret', 'clusterprofile-issuer-nonce-key']);
    const fresh = await replica();
    try {
      expect(await client(fresh).call('POST', '/v1/tenants', tenant(c, old.body.nonce))).toMatchObject({
        status: 403,
        body: { code: 'ERR_TENANT_NONCE_UNKNOWN' },
      });
      const nonce = await client(fresh).call('POST', '/v1/nonces', nonceRequest(c, new Date(Date.now() + 1)));
      expect((await client(fresh).call('POST', '/v1/tenants', tenant(c, nonce.body.nonce))).status).toBe(201);
      // The Secret was made again, by the ServiceAccount, and its key is not in the replica's log.
      const key = JSON.parse(
        await adminKubectl(['-n', NS, 'get', 'secret', 'clusterprofile-issuer-nonce-key', '-o', 'json']),
      ) as { data: { key: string } };
      expect(Buffer.from(key.data.key, 'base64')).toHaveLength(32);
      expect(fresh.log()).not.toContain(key.data.key);
    } finally {
      await fresh.stop();
    }
  });
});
