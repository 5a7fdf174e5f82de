// The tenant-cert plugin and the issuer as real processes over real TLS, from a fresh data dir:
// keygen → issuer serve → issuer trust → the plugin prints v1 / v1beta1 ExecCredentials whose certificate a real TLS
// server trusting client-ca.crt accepts and openssl verifies; cache hits with the issuer stopped; renewal of an
// expired entry; unknown consumer / wrong key; 100 parallel cold runs → exactly one handshake.
import { execFileSync } from 'node:child_process';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from '../helpers/tls.js';
import { createSigner, liqoIdentityYaml, writeText } from '../helpers/tenant-cert-plugin.js';
import {
  CLI,
  V1,
  V1BETA1,
  cacheEntries,
  expireCache,
  issuerConfig,
  runNode,
  runPlugin,
  startCountingProxy,
  startIssuer,
  type PluginSetup,
  type RunningIssuer,
  type StandIn,
} from '../helpers/tenant-cert-plugin-run.js';

const PROVIDER = 'member-1';
const CONSUMER = 'consumer-1';

interface Credential {
  apiVersion: string;
  kind: string;
  status: { clientCertificateData: string; clientKeyData: string; expirationTimestamp: string; token?: string };
}

let root: string;
let dataDir: string;
let keyFile: string;
let issuer: RunningIssuer;
let servingCa: string;
let clientCa: string;

function setup(overrides: Partial<PluginSetup> = {}): PluginSetup {
  const dir = mkdtempSync(join(root, 'run-'));
  return {
    clusterID: CONSUMER,
    keyFile,
    cacheDir: join(dir, 'cache'),
    identityDir: join(dir, 'identities'),
    config: issuerConfig(issuer, servingCa, PROVIDER),
    ...overrides,
  };
}

function parse(stdout: string): Credential {
  return JSON.parse(stdout) as Credential;
}

/** Makes a key with `clusterprofile keygen` (a real process) and returns its file and public key PEM. */
async function keygen(name: string, algorithm = 'ed25519'): Promise<{ file: string; publicKey: string }> {
  const file = join(root, name);
  const result = await runNode(CLI, ['keygen', '--out', file, '--algorithm', algorithm]);
  expect(result.code, result.stderr).toBe(0);
  writeFileSync(`${file}.pub`, result.stdout);
  return { file, publicKey: `${file}.pub` };
}

async function trust(clusterID: string, publicKeyFile: string): Promise<void> {
  const result = await runNode(CLI, [
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    clusterID,
    '--public-key',
    publicKeyFile,
  ]);
  expect(result.code, result.stderr).toBe(0);
}

/** One HTTPS request to a server that requires a client certificate signed by client-ca.crt. */
async function mtlsGet(url: string, ca: string, cert: string, key: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca, cert, key, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-tc-issuer-'));
  dataDir = join(root, 'data');
  const key = await keygen('consumer.key');
  keyFile = key.file;
  issuer = await startIssuer(dataDir, PROVIDER);
  servingCa = readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8');
  clientCa = readFileSync(join(dataDir, 'client-ca.crt'), 'utf8');
  await trust(CONSUMER, key.publicKey);
});

afterAll(async () => {
  await issuer?.stop();
});

describe('tenant-cert plugin ⇄ issuer (real processes, real TLS)', () => {
  let first: Credential;
  let firstSetup: PluginSetup;

  it("prints a v1 ExecCredential with our certificate and key, expiring at 2/3 of the certificate's lifetime", async () => {
    firstSetup = setup();
    const result = await runPlugin(firstSetup, V1);
    expect(result.code, result.stderr).toBe(0);
    first = parse(result.stdout);
    expect(first.apiVersion).toBe(V1);
    expect(first.kind).toBe('ExecCredential');
    expect(first.status.token).toBeUndefined();
    const certificate = new X509Certificate(first.status.clientCertificateData);
    expect(certificate.subject).toContain(`CN=${CONSUMER}`);
    // The key is ours (the private key never left the process: the certificate certifies its public half).
    const ours = createPublicKey(createPrivateKey(readFileSync(keyFile, 'utf8'))).export({
      type: 'spki',
      format: 'der',
    });
    expect(certificate.publicKey.export({ type: 'spki', format: 'der' }).equals(ours)).toBe(true);
    expect(first.status.clientKeyData).toBe(readFileSync(keyFile, 'utf8'));
    const notBefore = certificate.validFromDate.getTime();
    const notAfter = certificate.validToDate.getTime();
    const expiry = Date.parse(first.status.expirationTimestamp);
    expect(first.status.expirationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(expiry).toBeLessThanOrEqual(notBefore + ((notAfter - notBefore) * 2) / 3);
    expect(expiry).toBeGreaterThan(Date.now() + 60 * 60_000);
    expect(certificate.checkIssued(new X509Certificate(clientCa))).toBe(true);
    expect(cacheEntries(firstSetup.cacheDir)).toHaveLength(1);
  });

  it('prints a v1beta1 ExecCredential when asked in v1beta1', async () => {
    const result = await runPlugin(setup(), V1BETA1);
    expect(result.code, result.stderr).toBe(0);
    const credential = parse(result.stdout);
    expect(credential.apiVersion).toBe(V1BETA1);
    expect(new X509Certificate(credential.status.clientCertificateData).subject).toContain(`CN=${CONSUMER}`);
  });

  it('openssl verifies the certificate against client-ca.crt and its key matches ours', () => {
    const certFile = join(root, 'issued.crt');
    writeFileSync(certFile, first.status.clientCertificateData);
    const verify = execFileSync(
      'openssl',
      ['verify', '-purpose', 'sslclient', '-CAfile', join(dataDir, 'client-ca.crt'), certFile],
      { encoding: 'utf8' },
    );
    expect(verify.trim()).toBe(`${certFile}: OK`);
    const certKey = execFileSync('openssl', ['x509', '-in', certFile, '-noout', '-pubkey'], { encoding: 'utf8' });
    const fileKey = execFileSync('openssl', ['pkey', '-in', keyFile, '-pubout'], { encoding: 'utf8' });
    expect(certKey).toBe(fileKey);
  });

  it('the certificate is accepted by a real TLS server trusting client-ca.crt', async () => {
    const ca = await createTestCa('member-api-ca');
    const serving = await ca.issueServerCert();
    const seen: string[] = [];
    const server = https.createServer(
      { cert: serving.cert, key: serving.key, ca: clientCa, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        const peer = (req.socket as import('node:tls').TLSSocket).getPeerCertificate();
        seen.push(peer.subject.CN as string);
        res.end('ok');
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/`;
    try {
      const answer = await mtlsGet(url, ca.cert, first.status.clientCertificateData, first.status.clientKeyData);
      expect(answer).toEqual({ status: 200, body: 'ok' });
      expect(seen).toEqual([CONSUMER]);
      // A certificate from another CA is refused by the same server: the check above means something.
      const stranger = await ca.issueClientCert(CONSUMER);
      await expect(mtlsGet(url, ca.cert, stranger.cert, stranger.key)).rejects.toThrow();
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('an expired cache entry is renewed: a new certificate from the issuer', async () => {
    expireCache(firstSetup.cacheDir);
    const result = await runPlugin(firstSetup, V1);
    expect(result.code, result.stderr).toBe(0);
    const renewed = parse(result.stdout);
    const before = new X509Certificate(first.status.clientCertificateData);
    const after = new X509Certificate(renewed.status.clientCertificateData);
    expect(after.serialNumber).not.toBe(before.serialNumber);
    expect(Date.parse(renewed.status.expirationTimestamp)).toBeGreaterThan(Date.now());
    first = renewed;
  });

  it("unknown consumer: the issuer's ERR_TENANT_UNKNOWN_CONSUMER, exit 1, empty stdout, nothing cached", async () => {
    const s = setup({ clusterID: 'stranger-1' });
    const result = await runPlugin(s);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_UNKNOWN_CONSUMER');
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(cacheEntries(s.cacheDir)).toEqual([]);
  });

  it('wrong key (trusted consumer, another key): refused with a clear code, nothing cached', async () => {
    const other = await keygen('other.key', 'ecdsa-p256');
    const s = setup({ keyFile: other.file });
    const result = await runPlugin(s);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    // The nonce request is already signed with the cluster key: the wrong key is refused there, before any nonce.
    expect(result.stderr).toMatch(/^clusterprofile-tenant-cert: ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID: /);
    expect(cacheEntries(s.cacheDir)).toEqual([]);
  });

  it('a key file others can read is refused before anything else (exit 2)', async () => {
    const loose = join(root, 'loose.key');
    writeFileSync(loose, readFileSync(keyFile), { mode: 0o644 });
    const result = await runPlugin(setup({ keyFile: loose }));
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_KEY_FILE');
    expect(result.stderr).toContain('chmod 600');
  });
});

describe('tenant-cert plugin: an imported Identity next to an issuer', () => {
  it('is served while valid (no handshake); an expired one falls back to the issuer with a note', async () => {
    const signer = await createSigner('liqo-provider-ca');
    const ours = createPublicKey(createPrivateKey(readFileSync(keyFile, 'utf8')));
    const valid = await signer.issue(ours, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 365 * 86_400_000),
    });
    const s = setup();
    const file = writeText(
      root,
      'imported-identity.yaml',
      liqoIdentityYaml({
        provider: PROVIDER,
        consumer: CONSUMER,
        certPem: valid,
        apiServer: 'https://member.example:6443',
      }),
    );
    const imported = await runNode(CLI, [
      'identity',
      'import',
      file,
      '--key-file',
      keyFile,
      '--identity-dir',
      s.identityDir,
    ]);
    expect(imported.code, imported.stderr).toBe(0);
    const served = await runPlugin(s);
    expect(served.code, served.stderr).toBe(0);
    expect(new X509Certificate(parse(served.stdout).status.clientCertificateData).serialNumber).toBe(
      new X509Certificate(valid).serialNumber,
    );

    // Expired: written straight into the store (import would refuse it), the issuer answers instead.
    const expired = await signer.issue(ours, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 7_200_000),
      notAfter: new Date(Date.now() - 3_600_000),
    });
    writeFileSync(
      imported.stdout.trim(),
      liqoIdentityYaml({ provider: PROVIDER, consumer: CONSUMER, certPem: expired }),
      { mode: 0o600 },
    );
    const fresh = await runPlugin(setup({ identityDir: s.identityDir }));
    expect(fresh.code, fresh.stderr).toBe(0);
    expect(fresh.stderr).toContain('not using the imported Identity (ERR_TENANT_CERT_BAD_CERTIFICATE');
    const certificate = new X509Certificate(parse(fresh.stdout).status.clientCertificateData);
    expect(certificate.checkIssued(new X509Certificate(clientCa))).toBe(true);
  });
});

describe('tenant-cert plugin: 100 parallel runs on a cold cache', () => {
  let proxy: StandIn;
  let ca: TestCa;
  beforeAll(async () => {
    ca = await createTestCa('proxy-ca');
    proxy = await startCountingProxy(ca, issuer.url, servingCa);
  });
  afterAll(async () => {
    await proxy?.close();
  });

  it('exactly one handshake at the issuer; all 100 print the same valid credential', async () => {
    const s = setup({ config: { issuerURL: proxy.url, issuerCA: ca.certBase64, providerClusterID: PROVIDER } });
    const results = await Promise.all(
      Array.from({ length: Number(process.env['TC_PARALLEL'] ?? 100) }, () => runPlugin(s, V1)),
    );
    const failures = results.filter((r) => r.code !== 0);
    expect(failures.map((r) => r.stderr)).toEqual([]);
    const serials = new Set(
      results.map((r) => new X509Certificate(parse(r.stdout).status.clientCertificateData).serialNumber),
    );
    expect(serials.size).toBe(1);
    expect(proxy.counts.get('POST /v1/nonces')).toBe(1);
    expect(proxy.counts.get('POST /v1/tenants')).toBe(1);
  }, 180_000);
});

describe('tenant-cert plugin: a cache hit needs no issuer', () => {
  it('serves the cached certificate with the issuer stopped; an expired entry then fails cleanly and is not replaced', async () => {
    const s = setup();
    const cold = await runPlugin(s, V1);
    expect(cold.code, cold.stderr).toBe(0);
    await issuer.stop();
    const warm = await runPlugin(s, V1);
    expect(warm.code, warm.stderr).toBe(0);
    expect(warm.stdout).toBe(cold.stdout);
    // The same cache entry answers v1beta1 too (the apiVersion is not part of the identity).
    const beta = await runPlugin(s, V1BETA1);
    expect(beta.code).toBe(0);
    expect(parse(beta.stdout).status).toEqual(parse(cold.stdout).status);

    expireCache(s.cacheDir);
    const entry = readFileSync(cacheEntries(s.cacheDir)[0] ?? '', 'utf8');
    const down = await runPlugin(s, V1, ['--timeout', '2']);
    expect(down.code).toBe(1);
    expect(down.stdout).toBe('');
    expect(down.stderr).toContain('ERR_TENANT_CERT_ISSUER_UNREACHABLE');
    expect(readFileSync(cacheEntries(s.cacheDir)[0] ?? '', 'utf8')).toBe(entry);
  });
});
