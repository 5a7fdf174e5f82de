// The real tenant-cert plugin process, where the error registry decides what a user sees: an issuer answering 5xx
// with a code of its own trouble (retried, reported as ERR_TENANT_CERT_ISSUER_ERROR naming it), and a configuration
// error found only on a cache miss (exit 2 like every ERR_TENANT_CERT_CONFIG).
import { mkdtempSync } from 'node:fs';
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
const standIns: StandIn[] = [];

function setup(issuerURL: string, issuerCaPem = ca.cert): PluginSetup {
  const dir = mkdtempSync(join(tmpdir(), 'cpc-tc-codes-'));
  return {
    clusterID: 'consumer-1',
    keyFile: key.file,
    cacheDir: join(dir, 'cache'),
    identityDir: join(dir, 'identities'),
    config: { issuerURL, issuerCA: Buffer.from(issuerCaPem).toString('base64'), providerClusterID: 'member-1' },
  };
}

beforeAll(async () => {
  ca = await createTestCa('issuer-serving-ca');
  key = createKeyFile();
});

afterAll(async () => {
  await Promise.all(standIns.map((s) => s.close()));
});

describe('tenant-cert plugin: codes from the registry', () => {
  it('a 500 with a code the registry does not mark retryable: retried, ERR_TENANT_CERT_ISSUER_ERROR naming it, exit 1', async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'ERR_ISSUER_DATA_DIR', message: 'internal error (details in the issuer log)' }));
    });
    standIns.push(standIn);
    const s = setup(standIn.url);
    const result = await runPlugin(s, undefined, ['--timeout', '5']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const attempts = standIn.counts.get('POST /v1/nonces') ?? 0;
    expect(attempts).toBeGreaterThan(1);
    expect(result.stderr).toContain(
      `ERR_TENANT_CERT_ISSUER_ERROR: the issuer answered HTTP 500 with ERR_ISSUER_DATA_DIR: internal error (details in the issuer log) (gave up after ${attempts} attempts)`,
    );
    expect(cacheEntries(s.cacheDir)).toEqual([]);
  });

  it('a code this copy does not know (a newer issuer) on a 503: retried the same way', async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'ERR_ISSUER_MAINTENANCE', message: 'back at noon' }));
    });
    standIns.push(standIn);
    const result = await runPlugin(setup(standIn.url), undefined, ['--timeout', '3']);
    expect(result.code).toBe(1);
    expect(standIn.counts.get('POST /v1/nonces')).toBeGreaterThan(1);
    expect(result.stderr).toContain(
      'ERR_TENANT_CERT_ISSUER_ERROR: the issuer answered HTTP 503 with ERR_ISSUER_MAINTENANCE: back at noon',
    );
  });

  it('an issuerCA that only fails to parse on a cache miss is ERR_TENANT_CERT_CONFIG, exit 2, and no request is sent', async () => {
    const standIn = await startStandIn(ca, (_req, res) => {
      res.writeHead(500).end();
    });
    standIns.push(standIn);
    // A PEM block of a DER SEQUENCE: the cheap shape check of the settings passes, X.509 parsing does not.
    const body = Buffer.concat([Buffer.from([0x30, 0x44]), Buffer.alloc(68)]).toString('base64');
    const result = await runPlugin(
      setup(standIn.url, `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`),
    );
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      'ERR_TENANT_CERT_CONFIG: spec.cluster.config.issuerCA: a certificate in the bundle cannot be parsed',
    );
    expect(standIn.counts.size).toBe(0);
  });
});
