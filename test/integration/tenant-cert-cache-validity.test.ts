/**
 * The tenant-cert plugin binary against a real `clusterprofile issuer serve`, with its cache entry edited so that
 * every stamp (expirationTimestamp, the state's notAfter) says valid while the certificate itself does not: expired,
 * not yet valid (what a clock set back looks like), or not a certificate at all. The entry is a miss: the plugin
 * renews at the issuer, says why on stderr and the renewed entry replaces the stale one; when renewal fails, nothing
 * is printed and the stale entry is left as it was (never served).
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '../../src/base/exec-credential.js';
import { createKeyFile, createSigner, type TestKey, type TestSigner } from '../helpers/tenant-cert-plugin.js';
import {
  CLI,
  cacheEntries,
  issuerConfig,
  runNode,
  runPlugin,
  startIssuer,
  type PluginSetup,
  type RunningIssuer,
} from '../helpers/tenant-cert-plugin-run.js';

const PROVIDER = 'member-1';
const CONSUMER = 'consumer-1';
const HOUR = 3_600_000;

interface Entry {
  status: { clientCertificateData: string; expirationTimestamp: string };
  state: { notAfter: string; serialNumber: string };
}

let root: string;
let key: TestKey;
let signer: TestSigner;
let issuer: TrustingIssuer;

interface TrustingIssuer {
  running: RunningIssuer;
  config: Record<string, unknown>;
  clientCa: X509Certificate;
}

/** `clusterprofile issuer serve` in a fresh data directory, trusting our key for CONSUMER. */
async function startTrustingIssuer(name: string): Promise<TrustingIssuer> {
  const dataDir = join(root, name);
  const running = await startIssuer(dataDir, PROVIDER);
  const publicKey = join(root, `${name}.pub`);
  writeFileSync(publicKey, key.publicKey.export({ type: 'spki', format: 'pem' }));
  const trusted = await runNode(CLI, [
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    CONSUMER,
    '--public-key',
    publicKey,
  ]);
  expect(trusted.code, trusted.stderr).toBe(0);
  return {
    running,
    config: issuerConfig(running, readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'), PROVIDER),
    clientCa: new X509Certificate(readFileSync(join(dataDir, 'client-ca.crt'), 'utf8')),
  };
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-tc-cache-validity-'));
  key = createKeyFile();
  signer = await createSigner('cache-validity-ca');
  issuer = await startTrustingIssuer('data');
});

afterAll(async () => {
  await issuer?.running.stop();
});

function setup(config = issuer.config): PluginSetup {
  const dir = mkdtempSync(join(root, 'run-'));
  return {
    clusterID: CONSUMER,
    keyFile: key.file,
    cacheDir: join(dir, 'cache'),
    identityDir: join(dir, 'identities'),
    config,
  };
}

/** Runs the plugin once (a handshake) and returns its cache entry's file. */
async function cached(s: PluginSetup): Promise<string> {
  const first = await runPlugin(s);
  expect(first.code, first.stderr).toBe(0);
  const [file] = cacheEntries(s.cacheDir);
  expect(file).toBeDefined();
  return file!;
}

/** Puts `certificate` into the entry with every stamp a day ahead: what an edited or restored entry may hold. */
function plant(file: string, certificate: string): void {
  const entry = JSON.parse(readFileSync(file, 'utf8')) as Entry;
  const dayAhead = formatTimestamp(Date.now() + 24 * HOUR, { seconds: true });
  entry.status.clientCertificateData = certificate;
  entry.status.expirationTimestamp = dayAhead;
  entry.state.notAfter = dayAhead;
  writeFileSync(file, JSON.stringify(entry), { mode: 0o600 });
}

const served = (stdout: string): X509Certificate =>
  new X509Certificate((JSON.parse(stdout) as Entry).status.clientCertificateData);

describe('a cached certificate is served only inside its own validity', () => {
  const cases: [string, () => Promise<string>][] = [
    [
      'expired an hour ago',
      () =>
        signer.issue(key.publicKey, {
          cn: CONSUMER,
          notBefore: new Date(Date.now() - 2 * HOUR),
          notAfter: new Date(Date.now() - HOUR),
        }),
    ],
    [
      'expiring inside the renewal margin (30 s)',
      () =>
        signer.issue(key.publicKey, {
          cn: CONSUMER,
          notBefore: new Date(Date.now() - HOUR),
          notAfter: new Date(Date.now() + 30_000),
        }),
    ],
    [
      'valid only from an hour ahead (a clock set back)',
      () =>
        signer.issue(key.publicKey, {
          cn: CONSUMER,
          notBefore: new Date(Date.now() + HOUR),
          notAfter: new Date(Date.now() + 24 * HOUR),
        }),
    ],
    ['not a certificate', async () => '-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----\n'],
  ];

  for (const [name, make] of cases) {
    it(`renews at the issuer, says so, and replaces the entry: ${name}`, async () => {
      const s = setup();
      const file = await cached(s);
      const stale = await make();
      plant(file, stale);

      const result = await runPlugin(s);
      expect(result.code, result.stderr).toBe(0);
      const renewed = served(result.stdout);
      expect(renewed.checkIssued(issuer.clientCa)).toBe(true);
      expect(renewed.validToDate.getTime()).toBeGreaterThan(Date.now() + HOUR);
      expect(result.stderr).toContain(`renewing: the certificate cached in ${file} `);
      // The renewed entry replaced the stale one, and is served from then on without a word.
      const entry = JSON.parse(readFileSync(file, 'utf8')) as Entry;
      expect(entry.status.clientCertificateData).not.toBe(stale);
      expect(new X509Certificate(entry.status.clientCertificateData).serialNumber).toBe(renewed.serialNumber);
      const hit = await runPlugin(s);
      expect(hit.code, hit.stderr).toBe(0);
      expect(hit.stderr).toBe('');
      expect(served(hit.stdout).serialNumber).toBe(renewed.serialNumber);
    });
  }

  it('when renewal fails: exit 1, nothing on stdout, the stale entry is not served and left as it was', async () => {
    const own = await startTrustingIssuer('stopped');
    const s = setup(own.config);
    const file = await cached(s);
    await own.running.stop();
    const expired = await signer.issue(key.publicKey, {
      cn: CONSUMER,
      notBefore: new Date(Date.now() - 2 * HOUR),
      notAfter: new Date(Date.now() - HOUR),
    });
    plant(file, expired);
    const before = readFileSync(file, 'utf8');
    const result = await runPlugin(s, undefined, ['--timeout', '1']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/renewing: the certificate cached in .* expires at /);
    expect(result.stderr).toMatch(/ERR_[A-Z_]+/);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(readFileSync(file, 'utf8')).toBe(before);
  });
});
