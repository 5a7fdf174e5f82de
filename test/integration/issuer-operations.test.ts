/**
 * The issuer's operational side, as an operator meets it on a real `clusterprofile issuer serve` process: /readyz
 * and /healthz, /metrics (Prometheus text, on the HTTPS listener and on --metrics-listen), the graceful stop on
 * SIGTERM (requests in flight answered, new connections refused, data dir released, exit 0) and --log-format json.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Agent, request as httpsRequest, type RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { createTestCa } from '../helpers/tls.js';
import { cli, issuerClient, nonceRequest, serveIssuer, type IssuerProcess } from '../helpers/issuer-process.js';

const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-ops-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let counter = 0;
async function freshIssuer(
  extra: string[] = [],
  consumers = ['c1'],
): Promise<{ issuer: IssuerProcess; keys: Record<string, string> }> {
  const dataDir = join(work, `data-${++counter}`);
  const keys: Record<string, string> = {};
  for (const consumer of consumers) {
    const keyFile = join(work, `${consumer}-${counter}.key`);
    const made = await cli(['keygen', '--out', keyFile]);
    expect(made.code, made.stderr).toBe(0);
    writeFileSync(`${keyFile}.pub`, made.stdout);
    const trusted = await cli([
      'issuer',
      'trust',
      '--data-dir',
      dataDir,
      '--cluster-id',
      consumer,
      '--public-key',
      `${keyFile}.pub`,
    ]);
    expect(trusted.code, trusted.stderr).toBe(0);
    keys[consumer] = keyFile;
  }
  const issuer = await serveIssuer(dataDir, 'p1', extra);
  running.push(issuer);
  return { issuer, keys };
}

let running: IssuerProcess[] = [];
afterEach(async () => {
  await Promise.all(running.map((issuer) => issuer.stop()));
  running = [];
});

async function tenantFor(keyFile: string, consumer: string, nonce: string) {
  return buildTenant({
    privateKey: createPrivateKey(readFileSync(keyFile, 'utf8')),
    consumerClusterID: consumer,
    providerClusterID: 'p1',
    nonce,
  });
}

/** Prometheus text → `name{labels}` → value (labels as printed, in prom-client's order). */
function parseMetrics(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    expect(match, `not a sample line: ${line}`).not.toBeNull();
    samples.set(match![1]!, Number(match![2]));
  }
  return samples;
}

function get(url: string): Promise<{ status: number; body: string; type: string | undefined }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, body, type: response.headers['content-type'] }),
      );
    })
      .on('error', reject)
      .end();
  });
}

describe('readiness and liveness', () => {
  it('/readyz answers ready with its checks; when the data dir is no longer locked by the issuer it answers 503 coded, /healthz stays 200', async () => {
    const { issuer } = await freshIssuer();
    const client = issuerClient(issuer);
    try {
      expect(await client.call('GET', '/readyz')).toEqual({
        status: 200,
        body: { status: 'ready', checks: { serving: 'ok', 'data-dir': 'ok' } },
      });
      rmSync(join(issuer.dataDir, 'issuer.lock'));
      const notReady = await client.call('GET', '/readyz');
      expect(notReady.status).toBe(503);
      expect(notReady.body).toMatchObject({
        code: 'ERR_ISSUER_NOT_READY',
        checks: { serving: 'ok', 'data-dir': 'ERR_ISSUER_DATA_DIR' },
      });
      expect(notReady.body.message).toContain('data-dir');
      expect(await client.call('GET', '/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
      expect(await client.call('POST', '/readyz', {})).toMatchObject({
        status: 405,
        body: { code: 'ERR_ISSUER_METHOD_NOT_ALLOWED' },
      });
    } finally {
      await client.close();
    }
    await expect
      .poll(() => issuer.log())
      .toMatch(
        /readiness check data-dir failed: ERR_ISSUER_DATA_DIR: the lock .*issuer\.lock was removed: this process no longer holds the data dir/,
      );
  });
});

describe('--tls-cert-file / --tls-key-file (the serving certificate from a kubernetes.io/tls Secret)', () => {
  it('serves HTTPS with the given pair, which only its CA validates; a key of another certificate is a coded flag error that quotes no key', async () => {
    const ca = await createTestCa('issuer-serving-test-ca');
    const pair = await ca.issueServerCert({ ips: ['127.0.0.1'] });
    const other = await ca.issueServerCert({ ips: ['127.0.0.1'] });
    const tlsDir = mkdtempSync(join(work, 'tls-'));
    writeFileSync(join(tlsDir, 'tls.crt'), pair.cert);
    writeFileSync(join(tlsDir, 'tls.key'), pair.key);
    writeFileSync(join(tlsDir, 'other.key'), other.key);
    const { issuer } = await freshIssuer([
      '--tls-cert-file',
      join(tlsDir, 'tls.crt'),
      '--tls-key-file',
      join(tlsDir, 'tls.key'),
    ]);
    const viaSecretCa = await new Promise<number | undefined>((resolve, reject) => {
      httpsRequest(`${issuer.url}/readyz`, { ca: ca.cert, agent: new Agent({ keepAlive: false }) }, (response) => {
        response.resume();
        resolve(response.statusCode);
      })
        .on('error', reject)
        .end();
    });
    expect(viaSecretCa).toBe(200);
    // The data dir's own serving CA does not validate it.
    expect(await connect(issuer.url, readFileSync(join(issuer.dataDir, 'serving-ca.crt'), 'utf8'))).not.toMatch(
      /^HTTP/,
    );

    const mismatchDir = join(work, `data-${++counter}`);
    const mismatch = await cli([
      'issuer',
      'serve',
      '--data-dir',
      mismatchDir,
      '--cluster-id',
      'p1',
      '--listen',
      '127.0.0.1:0',
      '--tls-cert-file',
      join(tlsDir, 'tls.crt'),
      '--tls-key-file',
      join(tlsDir, 'other.key'),
    ]);
    expect(mismatch.code).toBe(1);
    expect(mismatch.stdout).toBe('');
    // Refused before anything is made: no data dir, no CA.
    expect(existsSync(mismatchDir)).toBe(false);
    expect(mismatch.stderr).toContain('ERR_ISSUER_CONFIG');
    expect(mismatch.stderr).toContain('is not the key of the certificate');
    expect(mismatch.stderr).not.toContain(other.key.split('\n')[1]!);
    const alone = await cli([
      'issuer',
      'serve',
      '--data-dir',
      join(work, `data-${++counter}`),
      '--cluster-id',
      'p1',
      '--listen',
      '127.0.0.1:0',
      '--tls-cert-file',
      join(tlsDir, 'tls.crt'),
    ]);
    expect(alone.code).toBe(2); // a flag combination: ERR_USAGE
    expect(alone.stderr).toContain('--tls-cert-file and --tls-key-file go together');
  });
});

describe('metrics', () => {
  it('counts handshakes by step, result and code, certificates by signer, outstanding nonces — on HTTPS and on --metrics-listen', async () => {
    const { issuer, keys } = await freshIssuer(['--metrics-listen', '127.0.0.1:0']);
    const metricsUrl = /metrics on (http:\/\/127\.0\.0\.1:\d+)\/metrics/.exec(issuer.log())?.[1];
    expect(metricsUrl, issuer.log()).toBeDefined();
    const client = issuerClient(issuer);
    try {
      const scrape = async () => {
        const response = await get(`${metricsUrl}/metrics`);
        expect(response.status).toBe(200);
        expect(response.type).toContain('text/plain');
        return parseMetrics(response.body);
      };
      const before = await scrape();
      expect(before.get('clusterprofile_issuer_nonces_outstanding')).toBe(0);
      expect(before.get('clusterprofile_issuer_certificates_issued_total{signer="embedded"}')).toBeUndefined();
      expect(before.get('clusterprofile_issuer_process_cpu_seconds_total')).toBeGreaterThan(0);

      const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keys['c1']!, 'c1'));
      expect(nonce.status).toBe(201);
      expect((await scrape()).get('clusterprofile_issuer_nonces_outstanding')).toBe(1);
      const tenant = await tenantFor(keys['c1']!, 'c1', nonce.body.nonce);
      expect((await client.call('POST', '/v1/tenants', tenant)).status).toBe(201);
      // The same Tenant again: refused (the nonce is spent).
      expect(await client.call('POST', '/v1/tenants', tenant)).toMatchObject({
        status: 403,
        body: { code: 'ERR_TENANT_NONCE_REUSED' },
      });

      const after = await scrape();
      expect(after.get('clusterprofile_issuer_handshakes_total{step="nonce",result="ok",code=""}')).toBe(1);
      expect(after.get('clusterprofile_issuer_handshakes_total{step="tenant",result="ok",code=""}')).toBe(1);
      expect(
        after.get(
          'clusterprofile_issuer_handshakes_total{step="tenant",result="refused",code="ERR_TENANT_NONCE_REUSED"}',
        ),
      ).toBe(1);
      expect(after.get('clusterprofile_issuer_certificates_issued_total{signer="embedded"}')).toBe(1);
      expect(after.get('clusterprofile_issuer_nonces_outstanding')).toBe(0);
      expect(after.get('clusterprofile_issuer_handshake_duration_seconds_count{step="tenant",result="ok"}')).toBe(1);
      expect(after.get('clusterprofile_issuer_handshake_duration_seconds_count{step="tenant",result="refused"}')).toBe(
        1,
      );
      expect(
        after.get('clusterprofile_issuer_handshake_duration_seconds_bucket{le="+Inf",step="tenant",result="ok"}'),
      ).toBe(1);
      expect(after.get('clusterprofile_issuer_ready')).toBe(0); // nobody asked /readyz yet

      // The HTTPS listener serves the same registry.
      expect((await client.call('GET', '/readyz')).status).toBe(200);
      const https = await client.call('GET', '/metrics');
      expect(https.status).toBe(200);
      const viaHttps = parseMetrics(https.body as string);
      expect(viaHttps.get('clusterprofile_issuer_handshakes_total{step="tenant",result="ok",code=""}')).toBe(1);
      expect(viaHttps.get('clusterprofile_issuer_ready')).toBe(1);

      // The plain listener serves /metrics only.
      const other = await get(`${metricsUrl}/v1/nonces`);
      expect(other.status).toBe(404);
      expect(JSON.parse(other.body)).toMatchObject({ code: 'ERR_ISSUER_NOT_FOUND' });
    } finally {
      await client.close();
    }
  });

  it('--metrics-listen that is not HOST:PORT, or a port in use, is a coded flag error', async () => {
    const dataDir = join(work, `data-${++counter}`);
    const bad = await cli([
      'issuer',
      'serve',
      '--data-dir',
      dataDir,
      '--cluster-id',
      'p1',
      '--listen',
      '127.0.0.1:0',
      '--metrics-listen',
      'nope',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('ERR_ISSUER_CONFIG');
    expect(bad.stderr).toContain('--metrics-listen');
    const { issuer } = await freshIssuer();
    const port = new URL(issuer.url).port;
    const busy = await cli([
      'issuer',
      'serve',
      '--data-dir',
      join(work, `data-${++counter}`),
      '--cluster-id',
      'p1',
      '--listen',
      '127.0.0.1:0',
      '--metrics-listen',
      `127.0.0.1:${port}`,
    ]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain('ERR_ISSUER_CONFIG');
    expect(busy.stderr).toContain(`cannot listen on 127.0.0.1:${port}`);
    expect(busy.stderr).not.toMatch(/\n\s+at /);
  });
});

/** A POST whose headers and first 100 bytes of body are sent now; `finish()` sends the rest and reads the answer. */
function halfSentPost(url: string, ca: string, path: string, body: unknown) {
  const text = JSON.stringify(body);
  const options: RequestOptions = {
    method: 'POST',
    ca,
    agent: new Agent({ keepAlive: false }),
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
  };
  const finishers: Array<() => void> = [];
  let resolveConnected!: () => void;
  let rejectConnected!: (error: unknown) => void;
  const connected = new Promise<void>((resolve, reject) => {
    resolveConnected = resolve;
    rejectConnected = reject;
  });
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = httpsRequest(`${url}${path}`, options, (response) => {
      let data = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (data += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(data) }));
      response.on('error', reject);
    });
    req.on('error', (error) => {
      reject(error);
      rejectConnected(error);
    });
    req.on('socket', (socket) => socket.once('secureConnect', () => resolveConnected()));
    req.flushHeaders();
    req.write(text.slice(0, 100));
    finishers.push(() => req.end(text.slice(100)));
  });
  answer.catch(() => undefined);
  return {
    connected,
    finish: () => {
      for (const send of finishers) send();
      return answer;
    },
  };
}

function connect(url: string, ca: string): Promise<string> {
  return new Promise((resolve) => {
    const req = httpsRequest(`${url}/healthz`, { ca, agent: new Agent({ keepAlive: false }) }, (response) => {
      response.resume();
      resolve(`HTTP ${response.statusCode}`);
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

describe('graceful stop', () => {
  it('SIGTERM during a burst: every Tenant already received is answered with a certificate, new connections are refused, the lock is released, exit 0', async () => {
    const consumers = ['b1', 'b2', 'b3', 'b4', 'b5', 'b6'];
    const { issuer, keys } = await freshIssuer([], consumers);
    const ca = readFileSync(join(issuer.dataDir, 'serving-ca.crt'), 'utf8');
    const client = issuerClient(issuer);
    const tenants = [];
    for (const consumer of consumers) {
      const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keys[consumer]!, consumer));
      expect(nonce.status).toBe(201);
      tenants.push(await tenantFor(keys[consumer]!, consumer, nonce.body.nonce));
    }
    await client.close();
    const posts = tenants.map((tenant) => halfSentPost(issuer.url, ca, '/v1/tenants', tenant));
    await Promise.all(posts.map((post) => post.connected));
    // Let the issuer read the headers of every request (they are in flight from then on).
    await new Promise((resolve) => setTimeout(resolve, 500));

    const exited = new Promise<number | null>((resolve) => issuer.child.once('exit', (code) => resolve(code)));
    issuer.child.kill('SIGTERM');
    await expect.poll(() => issuer.log(), { timeout: 10_000 }).toContain('stopping (SIGTERM)');
    expect(await connect(issuer.url, ca)).toBe('ECONNREFUSED');

    const answers = await Promise.all(posts.map((post) => post.finish()));
    answers.forEach((answer, index) => {
      expect(answer.status, JSON.stringify(answer.body)).toBe(201);
      const pem = Buffer.from(answer.body.spec.authParams.signedCRT, 'base64').toString('utf8');
      expect(new X509Certificate(pem).subject).toContain(`CN=${consumers[index]}`);
    });
    expect(await exited).toBe(0);
    expect(issuer.log()).toContain(
      `stopped: ${consumers.length} of ${consumers.length} requests in flight answered; data dir released`,
    );
    expect(existsSync(join(issuer.dataDir, 'issuer.lock'))).toBe(false);
  });

  it('a request that does not finish within --shutdown-grace is cut; the issuer still exits 0 and says so', async () => {
    const { issuer, keys } = await freshIssuer(['--shutdown-grace', '1s']);
    const ca = readFileSync(join(issuer.dataDir, 'serving-ca.crt'), 'utf8');
    const client = issuerClient(issuer);
    const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keys['c1']!, 'c1'));
    await client.close();
    const post = halfSentPost(issuer.url, ca, '/v1/tenants', await tenantFor(keys['c1']!, 'c1', nonce.body.nonce));
    await post.connected;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const started = Date.now();
    expect(await issuer.stop('SIGTERM')).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(issuer.log()).toContain(
      'stopped: 0 of 1 requests in flight answered, 1 cut at the end of --shutdown-grace; data dir released',
    );
    await expect(post.finish()).rejects.toThrow();
  });
});

describe('a second signal', () => {
  it('during the grace period ends the issuer at once', async () => {
    const { issuer, keys } = await freshIssuer(['--shutdown-grace', '60s']);
    const ca = readFileSync(join(issuer.dataDir, 'serving-ca.crt'), 'utf8');
    const client = issuerClient(issuer);
    const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keys['c1']!, 'c1'));
    await client.close();
    const post = halfSentPost(issuer.url, ca, '/v1/tenants', await tenantFor(keys['c1']!, 'c1', nonce.body.nonce));
    await post.connected;
    await new Promise((resolve) => setTimeout(resolve, 500));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      issuer.child.once('exit', (_code, signal) => resolve(signal)),
    );
    issuer.child.kill('SIGTERM');
    await expect.poll(() => issuer.log(), { timeout: 10_000 }).toContain('stopping (SIGTERM)');
    const started = Date.now();
    issuer.child.kill('SIGTERM');
    expect(await exited).toBe('SIGTERM');
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(post.finish()).rejects.toThrow();
  });
});

describe('--log-format json', () => {
  it('one JSON object per line with time, level, msg, code, consumer, durationMs — and no nonce, key, signature or certificate', async () => {
    const { issuer, keys } = await freshIssuer(['--log-format', 'json']);
    const client = issuerClient(issuer);
    let nonceValue: string;
    let tenant: Awaited<ReturnType<typeof tenantFor>>;
    let certificate: string;
    try {
      const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keys['c1']!, 'c1'));
      nonceValue = nonce.body.nonce;
      tenant = await tenantFor(keys['c1']!, 'c1', nonceValue);
      const identity = await client.call('POST', '/v1/tenants', tenant);
      expect(identity.status).toBe(201);
      certificate = identity.body.spec.authParams.signedCRT;
      expect((await client.call('POST', '/v1/tenants', tenant)).status).toBe(403);
      expect((await client.call('POST', '/v1/tenants', '{not json')).status).toBe(400);
    } finally {
      await client.close();
    }
    expect(await issuer.stop('SIGTERM')).toBe(0);
    const lines = issuer.log().trimEnd().split('\n');
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const entry of entries) {
      expect(Number.isNaN(Date.parse(String(entry['time'])))).toBe(false);
      expect(['info', 'warn', 'error']).toContain(entry['level']);
      expect(typeof entry['msg']).toBe('string');
    }
    const handshakes = entries.filter((entry) => 'step' in entry);
    expect(handshakes).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'nonce issued',
        step: 'nonce',
        status: 201,
        code: null,
        consumer: 'c1',
        durationMs: expect.any(Number),
      }),
      expect.objectContaining({
        level: 'info',
        msg: 'certificate issued',
        step: 'tenant',
        status: 201,
        code: null,
        consumer: 'c1',
        validUntil: expect.any(String),
      }),
      expect.objectContaining({
        level: 'warn',
        step: 'tenant',
        status: 403,
        code: 'ERR_TENANT_NONCE_REUSED',
        consumer: 'c1',
        msg: expect.stringContaining('tenant refused: ERR_TENANT_NONCE_REUSED'),
      }),
      expect.objectContaining({
        level: 'warn',
        step: 'tenant',
        status: 400,
        code: 'ERR_TENANT_INVALID_DOCUMENT',
        consumer: null,
      }),
    ]);
    expect(entries.some((entry) => String(entry['msg']).startsWith('provider p1 listening on'))).toBe(true);
    expect(entries.at(-1)?.['msg']).toContain('stopped:');
    const text = issuer.log();
    const pem = Buffer.from(certificate, 'base64').toString('utf8');
    for (const secret of [
      nonceValue,
      tenant.spec.signature,
      tenant.spec.csr,
      tenant.spec.publicKey,
      certificate,
      pem.split('\n')[1]!,
      readFileSync(keys['c1']!, 'utf8').split('\n')[1]!,
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(text).not.toContain('BEGIN');
  });

  it('the default text log is unchanged: timestamped "issuer:" lines', async () => {
    const { issuer, keys } = await freshIssuer();
    const client = issuerClient(issuer);
    const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keys['c1']!, 'c1'));
    expect(
      (await client.call('POST', '/v1/tenants', await tenantFor(keys['c1']!, 'c1', nonce.body.nonce))).status,
    ).toBe(201);
    await client.close();
    await issuer.stop();
    for (const line of issuer.log().trimEnd().split('\n')) {
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z issuer: /);
    }
    expect(issuer.log()).toMatch(/issuer: tenant c1: certificate issued, valid until /);
  });
});
