// The real plugin process against issuers that misbehave (stand-ins over real TLS): down, answering 500, too slow,
// presenting a certificate the configured CA did not sign. Every time: a coded error on stderr, exit 1, nothing
// on stdout, nothing cached.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestCa, type TestCa } from '../helpers/tls.js';
import { createKeyFile, type TestKey } from '../helpers/tenant-cert-plugin.js';
import {
  cacheEntries,
  runPlugin,
  startStandIn,
  type PluginSetup,
  type StandIn,
} from '../helpers/tenant-cert-plugin-run.js';

let ca: TestCa;
let key: TestKey;

function setup(issuerURL: string, caPem = ca.cert): PluginSetup {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-tc-fail-'));
  return {
    clusterID: 'consumer-1',
    keyFile: key.file,
    cacheDir: join(dir, 'cache'),
    identityDir: join(dir, 'identities'),
    config: { issuerURL, issuerCA: Buffer.from(caPem).toString('base64'), providerClusterID: 'member-1' },
  };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as import('node:net').AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  ca = await createTestCa('issuer-serving-ca');
  key = createKeyFile();
});

describe('tenant-cert plugin: a misbehaving issuer', () => {
  const standIns: StandIn[] = [];
  afterAll(async () => {
    await Promise.all(standIns.map((s) => s.close()));
  });

  it('issuer down: retries, then ERR_TENANT_CERT_ISSUER_UNREACHABLE, empty stdout, nothing cached', async () => {
    const s = setup(`https://127.0.0.1:${await closedPort()}`);
    const result = await runPlugin(s, undefined, ['--timeout', '3']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_ISSUER_UNREACHABLE');
    expect(result.stderr).toContain('ECONNREFUSED');
    expect(result.stderr).toMatch(/gave up after \d+ attempts/);
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(cacheEntries(s.cacheDir)).toEqual([]);
  });

  it("issuer answers 500: bounded retries with backoff, the issuer's code, nothing cached", async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'ERR_ISSUER_INTERNAL', message: 'the data dir is on fire' }));
    });
    standIns.push(standIn);
    const s = setup(standIn.url);
    const result = await runPlugin(s, undefined, ['--timeout', '5']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_ISSUER_INTERNAL');
    expect(result.stderr).toContain('the data dir is on fire');
    const attempts = standIn.counts.get('POST /v1/nonces') ?? 0;
    expect(attempts).toBeGreaterThan(1);
    expect(attempts).toBeLessThanOrEqual(5);
    expect(result.stderr).toContain(`gave up after ${attempts} attempts`);
    expect(result.ms).toBeLessThan(8_000);
    expect(cacheEntries(s.cacheDir)).toEqual([]);
  });

  it('issuer answers 502 without a JSON body: ERR_TENANT_CERT_ISSUER_ERROR', async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    });
    standIns.push(standIn);
    const result = await runPlugin(setup(standIn.url), undefined, ['--timeout', '2']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_ISSUER_ERROR');
    expect(result.stderr).toContain('HTTP 502');
  });

  it('issuer too slow: gives up at --timeout with ERR_TENANT_CERT_ISSUER_TIMEOUT', async () => {
    const standIn = await startStandIn(ca, () => {
      // never answers
    });
    standIns.push(standIn);
    const s = setup(standIn.url);
    const result = await runPlugin(s, undefined, ['--timeout', '2']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_ISSUER_TIMEOUT');
    expect(result.ms).toBeGreaterThan(1_900);
    expect(result.ms).toBeLessThan(6_000);
    expect(cacheEntries(s.cacheDir)).toEqual([]);
  });

  it('a refusal (403) is not retried', async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          code: 'ERR_TENANT_UNKNOWN_CONSUMER',
          message: 'consumer-1 is not trusted here',
          hint: 'clusterprofile issuer trust',
        }),
      );
    });
    standIns.push(standIn);
    const result = await runPlugin(setup(standIn.url));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_UNKNOWN_CONSUMER');
    expect(standIn.counts.get('POST /v1/nonces')).toBe(1);
  });

  it('an issuer whose certificate the configured issuerCA did not sign: ERR_TENANT_CERT_ISSUER_TLS, no retry', async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(200).end('{}');
    });
    standIns.push(standIn);
    const stranger = await createTestCa('someone-else');
    const result = await runPlugin(setup(standIn.url, stranger.cert));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_ISSUER_TLS');
    expect(standIn.counts.size).toBe(0);
  });

  it('bad settings are a usage error (exit 2) naming the field', async () => {
    const s = setup('https://127.0.0.1:1');
    s.config = { ...s.config, issuerCA: 'not base64!' };
    const result = await runPlugin(s);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('ERR_TENANT_CERT_CONFIG: spec.cluster.config.issuerCA');
  });
});
