import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { createTestCa } from '../helpers/tls.js';
import { cli, issuerClient, nonceRequest, serveIssuer, type IssuerProcess } from '../helpers/issuer-process.js';

const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-it-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

let counter = 0;
function freshDir(): string {
  return join(work, `data-${++counter}`);
}

async function consumerKey(name: string): Promise<{ keyFile: string; pubFile: string }> {
  const keyFile = join(work, `${name}-${counter}.key`);
  const made = await cli(['keygen', '--out', keyFile]);
  expect(made.code).toBe(0);
  const pubFile = `${keyFile}.pub`;
  writeFileSync(pubFile, made.stdout);
  return { keyFile, pubFile };
}

async function trust(dataDir: string, consumer: string, pubFile: string, extra: string[] = []): Promise<void> {
  const result = await cli([
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    consumer,
    '--public-key',
    pubFile,
    ...extra,
  ]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
}

async function handshake(issuer: IssuerProcess, consumer: string, keyFile: string, provider = 'p1') {
  const client = issuerClient(issuer);
  try {
    const nonce = await client.call('POST', '/v1/nonces', nonceRequest(keyFile, consumer, provider));
    expect(nonce.status).toBe(201);
    const tenant = await buildTenant({
      privateKey: createPrivateKey(readFileSync(keyFile, 'utf8')),
      consumerClusterID: consumer,
      providerClusterID: provider,
      nonce: nonce.body.nonce,
    });
    const identity = await client.call('POST', '/v1/tenants', tenant);
    return { nonce: nonce.body, tenant, identity };
  } finally {
    await client.close();
  }
}

let running: IssuerProcess[] = [];
afterEach(async () => {
  await Promise.all(running.map((issuer) => issuer.stop()));
  running = [];
});
async function start(dataDir: string, extra: string[] = []): Promise<IssuerProcess> {
  const issuer = await serveIssuer(dataDir, 'p1', extra);
  running.push(issuer);
  return issuer;
}

describe('clusterprofile issuer serve (a real process over real TLS)', () => {
  let shared: { dataDir: string; issuer: IssuerProcess; keyFile: string };

  beforeAll(async () => {
    const dataDir = freshDir();
    const { keyFile, pubFile } = await consumerKey('c1');
    await trust(dataDir, 'c1', pubFile);
    const issuer = await serveIssuer(dataDir, 'p1', [
      '--group',
      'tenants',
      '--api-server-url',
      'https://api.p1.example:6443',
    ]);
    shared = { dataDir, issuer, keyFile };
  });
  afterAll(async () => {
    await shared.issuer.stop();
  });

  it('first start makes the data dir: 0700, keys 0600, serving-ca.crt and client-ca.crt', () => {
    const { dataDir } = shared;
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    for (const key of ['serving-ca.key', 'serving.key', 'client-ca.key']) {
      expect(statSync(join(dataDir, key)).mode & 0o777).toBe(0o600);
    }
    expect(new X509Certificate(readFileSync(join(dataDir, 'serving-ca.crt'))).ca).toBe(true);
    expect(new X509Certificate(readFileSync(join(dataDir, 'client-ca.crt'))).ca).toBe(true);
    expect(shared.issuer.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('answers /healthz over TLS that only serving-ca.crt validates', async () => {
    const client = issuerClient(shared.issuer);
    expect(await client.call('GET', '/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
    await client.close();
    const untrusting = new Agent();
    await expect(request(`${shared.issuer.url}/healthz`, { dispatcher: untrusting })).rejects.toThrow();
    await untrusting.close();
  });

  it('the issued certificate is accepted by a TLS server that trusts client-ca.crt (and says what the issuer decided)', async () => {
    const { identity } = await handshake(shared.issuer, 'c1', shared.keyFile);
    expect(identity.status).toBe(201);
    expect(identity.body.spec.authParams.apiServer).toBe('https://api.p1.example:6443');
    const certPem = Buffer.from(identity.body.spec.authParams.signedCRT, 'base64').toString('utf8');

    const serverCa = await createTestCa('member-api');
    const serving = await serverCa.issueServerCert();
    const seen: string[] = [];
    const server = createServer(
      {
        cert: serving.cert,
        key: serving.key,
        ca: readFileSync(join(shared.dataDir, 'client-ca.crt')),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
        seen.push(`${peer.subject.CN} ${[peer.subject.O].flat().join(',')}`);
        res.end('ok');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const withCert = new Agent({
        connect: { ca: serverCa.cert, cert: certPem, key: readFileSync(shared.keyFile, 'utf8') },
      });
      const ok = await request(url, { dispatcher: withCert });
      expect(ok.statusCode).toBe(200);
      expect(await ok.body.text()).toBe('ok');
      expect(seen).toEqual(['c1 tenants']);
      await withCert.close();
      // Without the certificate the same server refuses the handshake.
      const without = new Agent({ connect: { ca: serverCa.cert } });
      await expect(request(url, { dispatcher: without }).then((r) => r.body.text())).rejects.toThrow();
      await without.close();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('bad input gets a coded error and leaves the issuer working', async () => {
    const client = issuerClient(shared.issuer);
    try {
      expect(await client.call('POST', '/v1/nonces', nonceRequest(shared.keyFile, 'stranger'))).toMatchObject({
        status: 403,
        body: { code: 'ERR_TENANT_UNKNOWN_CONSUMER' },
      });
      expect(await client.call('POST', '/v1/nonces', '{not json')).toMatchObject({
        status: 400,
        body: { code: 'ERR_TENANT_INVALID_DOCUMENT' },
      });
      expect(
        await client.call('POST', '/v1/nonces', { ...nonceRequest(shared.keyFile, 'c1'), extra: 1 }),
      ).toMatchObject({ status: 400, body: { code: 'ERR_TENANT_INVALID_DOCUMENT' } });
      expect(await client.call('POST', '/v1/tenants', 'x', { 'content-type': 'text/plain' })).toMatchObject({
        status: 415,
        body: { code: 'ERR_ISSUER_UNSUPPORTED_MEDIA_TYPE' },
      });
      expect(await client.call('POST', '/v1/tenants', JSON.stringify({ pad: 'x'.repeat(70_000) }))).toMatchObject({
        status: 413,
        body: { code: 'ERR_ISSUER_BODY_TOO_LARGE' },
      });
      // Sent chunked, with no content-length: the bound holds while the body is read, with the same answer.
      const chunked = new Agent({ connect: { ca: readFileSync(join(shared.dataDir, 'serving-ca.crt'), 'utf8') } });
      try {
        const answer = await request(`${shared.issuer.url}/v1/tenants`, {
          method: 'POST',
          dispatcher: chunked,
          headers: { 'content-type': 'application/json' },
          body: Readable.from(Array.from({ length: 5 }, () => Buffer.alloc(16_384, 0x20))),
        });
        expect({ status: answer.statusCode, body: await answer.body.json() }).toMatchObject({
          status: 413,
          body: { code: 'ERR_ISSUER_BODY_TOO_LARGE' },
        });
      } finally {
        await chunked.close();
      }
      expect(await client.call('GET', '/v1/tenants')).toMatchObject({
        status: 405,
        body: { code: 'ERR_ISSUER_METHOD_NOT_ALLOWED' },
      });
      expect(await client.call('GET', '/nope')).toMatchObject({ status: 404, body: { code: 'ERR_ISSUER_NOT_FOUND' } });
      const { tenant } = await handshake(shared.issuer, 'c1', shared.keyFile);
      expect(
        await client.call('POST', '/v1/tenants', { ...tenant, spec: { ...tenant.spec, signature: '!!!' } }),
      ).toMatchObject({
        status: 400,
        body: { code: 'ERR_TENANT_BAD_BASE64', path: '$.spec.signature' },
      });
      expect(await client.call('POST', '/v1/tenants', tenant)).toMatchObject({
        status: 403,
        body: { code: 'ERR_TENANT_NONCE_REUSED' },
      });
    } finally {
      await client.close();
    }
    // Still issuing.
    expect((await handshake(shared.issuer, 'c1', shared.keyFile)).identity.status).toBe(201);
    expect(shared.issuer.log()).not.toMatch(/internal error/);
  });

  it('issuer trust takes effect without a restart; untrust too', async () => {
    const { keyFile, pubFile } = await consumerKey('c9');
    expect((await handshake(shared.issuer, 'c9', keyFile).catch((e: Error) => e)) instanceof Error).toBe(true);
    await trust(shared.dataDir, 'c9', pubFile);
    expect((await handshake(shared.issuer, 'c9', keyFile)).identity.status).toBe(201);
    const listed = await cli(['issuer', 'list', '--data-dir', shared.dataDir]);
    expect(listed.stdout).toMatch(/^c1\ted25519\tSHA256:/m);
    expect(listed.stdout).toMatch(/^c9\ted25519\tSHA256:/m);
    expect((await cli(['issuer', 'untrust', '--data-dir', shared.dataDir, '--cluster-id', 'c9'])).code).toBe(0);
    const client = issuerClient(shared.issuer);
    expect(await client.call('POST', '/v1/nonces', nonceRequest(keyFile, 'c9'))).toMatchObject({
      status: 403,
      body: { code: 'ERR_TENANT_UNKNOWN_CONSUMER' },
    });
    await client.close();
  });

  it('a second issuer on the same data dir is refused', async () => {
    const second = await cli([
      'issuer',
      'serve',
      '--data-dir',
      shared.dataDir,
      '--listen',
      '127.0.0.1:0',
      '--cluster-id',
      'p1',
    ]);
    expect(second.code).toBe(1);
    expect(second.stdout).toBe('');
    expect(second.stderr).toMatch(/^ERR_ISSUER_DATA_DIR_LOCKED: /);
  });
});

describe('restarts and crashes', () => {
  it('a restart (even after SIGKILL) keeps trust, spent nonces and outstanding nonces', async () => {
    const dataDir = freshDir();
    const { keyFile, pubFile } = await consumerKey('c1');
    await trust(dataDir, 'c1', pubFile);
    let issuer = await start(dataDir);
    const spent = await handshake(issuer, 'c1', keyFile);
    expect(spent.identity.status).toBe(201);
    const client = issuerClient(issuer);
    const outstanding = (await client.call('POST', '/v1/nonces', nonceRequest(keyFile, 'c1'))).body.nonce as string;
    await client.close();
    // Make sure the unsynced "issue" line reached the file before the kill (the server does not fsync issues).
    await new Promise((resolve) => setTimeout(resolve, 200));
    await issuer.stop('SIGKILL');
    running = [];

    issuer = await start(dataDir);
    const again = issuerClient(issuer);
    try {
      expect(await again.call('POST', '/v1/tenants', spent.tenant)).toMatchObject({
        status: 403,
        body: { code: 'ERR_TENANT_NONCE_REUSED' },
      });
      const tenant = await buildTenant({
        privateKey: createPrivateKey(readFileSync(keyFile, 'utf8')),
        consumerClusterID: 'c1',
        providerClusterID: 'p1',
        nonce: outstanding,
      });
      expect((await again.call('POST', '/v1/tenants', tenant)).status).toBe(201);
    } finally {
      await again.close();
    }
    expect(readdirSync(dataDir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('refuses a data dir of another provider', async () => {
    const dataDir = freshDir();
    await start(dataDir);
    await running[0]!.stop();
    running = [];
    const other = await cli([
      'issuer',
      'serve',
      '--data-dir',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      '--cluster-id',
      'p2',
    ]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/^ERR_ISSUER_CONFIG: the data dir .* belongs to provider p1, not p2/);
  });
});

describe('the manual flow (tenant nonce | generate | accept)', () => {
  it('provider nonce -> consumer Tenant YAML -> provider Identity YAML; the nonce then is spent', async () => {
    const dataDir = freshDir();
    await start(dataDir); // records the provider ID and makes the CAs
    await running[0]!.stop();
    running = [];
    const { keyFile, pubFile } = await consumerKey('c1');
    await trust(dataDir, 'c1', pubFile);

    const nonce = await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c1']);
    expect(nonce.code).toBe(0);
    expect(nonce.stdout).toMatch(/^[A-Za-z0-9+/]{86}==\n$/);

    const tenant = await cli([
      'tenant',
      'generate',
      '--key-file',
      keyFile,
      '--cluster-id',
      'c1',
      '--provider-cluster-id',
      'p1',
      '--nonce',
      nonce.stdout.trim(),
    ]);
    expect(tenant.code).toBe(0);
    expect(parse(tenant.stdout)).toMatchObject({
      apiVersion: 'credentials.clusterprofile.io/v1alpha1',
      kind: 'Tenant',
      spec: { clusterID: 'c1', providerClusterID: 'p1' },
    });
    const tenantFile = join(work, 'tenant.yaml');
    writeFileSync(tenantFile, tenant.stdout);

    const identity = await cli([
      'tenant',
      'accept',
      '--data-dir',
      dataDir,
      tenantFile,
      '--api-server-url',
      'https://api.example:6443',
    ]);
    expect(identity.stderr).toMatch(/certificate issued/);
    expect(identity.code).toBe(0);
    const document = parse(identity.stdout);
    expect(document).toMatchObject({
      kind: 'Identity',
      spec: { clusterID: 'p1', consumerClusterID: 'c1', authParams: { apiServer: 'https://api.example:6443' } },
    });
    const cert = new X509Certificate(Buffer.from(document.spec.authParams.signedCRT, 'base64'));
    expect(cert.checkIssued(new X509Certificate(readFileSync(join(dataDir, 'client-ca.crt'))))).toBe(true);

    const replay = await cli(['tenant', 'accept', '--data-dir', dataDir], { stdin: tenant.stdout });
    expect(replay.code).toBe(1);
    expect(replay.stdout).toBe('');
    expect(replay.stderr).toMatch(/^ERR_TENANT_NONCE_REUSED: /m);
  });

  it('a Liqo-shaped Tenant is refused without --liqo-compat and accepted with it', async () => {
    const dataDir = freshDir();
    await start(dataDir);
    await running[0]!.stop();
    running = [];
    const { keyFile, pubFile } = await consumerKey('cl-consumer');
    await trust(dataDir, 'cl-consumer', pubFile);
    const nonce = (await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'cl-consumer'])).stdout.trim();
    const tenant = await cli([
      'tenant',
      'generate',
      '--liqo',
      '--key-file',
      keyFile,
      '--cluster-id',
      'cl-consumer',
      '--provider-cluster-id',
      'p1',
      '--nonce',
      nonce,
    ]);
    expect(parse(tenant.stdout)).toMatchObject({ apiVersion: 'authentication.liqo.io/v1beta1', kind: 'Tenant' });
    const refused = await cli(['tenant', 'accept', '--data-dir', dataDir, '-'], { stdin: tenant.stdout });
    expect(refused.stderr).toMatch(/^ERR_TENANT_LIQO_COMPAT_DISABLED: /m);
    const accepted = await cli(['tenant', 'accept', '--data-dir', dataDir, '--liqo-compat', '-'], {
      stdin: tenant.stdout,
    });
    expect(accepted.code).toBe(0);
    expect(parse(accepted.stdout)).toMatchObject({
      apiVersion: 'authentication.liqo.io/v1beta1',
      kind: 'Identity',
      spec: { type: 'ControlPlane', namespace: 'liqo-tenant-cl-consumer' },
    });
  });
});

describe('issuer and tenant commands: a missing flag is a usage error', () => {
  it.each([
    [['issuer', 'serve'], '--data-dir'],
    [['issuer', 'trust', '--data-dir', 'x'], '--cluster-id'],
    [['tenant', 'generate', '--cluster-id', 'c1'], '--provider-cluster-id'],
  ])('%j: exit 2 (as documented for ERR_USAGE), nothing on stdout', async (args, flag) => {
    const result = await cli(args, { cwd: work });
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(new RegExp(`^ERR_USAGE: .*${flag.slice(2)}`));
    expect(result.code).toBe(2);
  });
});
