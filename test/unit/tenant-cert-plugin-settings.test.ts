import { createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { keygen } from '../../src/cli/commands/keygen.js';
import { parseClusterConfig, readKeyFile, tenantCertSettings } from '../../src/providers/tenant-cert/settings.js';
import { createKeyFile, createSigner, type TestSigner } from '../helpers/tenant-cert-plugin.js';

function caught(fn: () => unknown): { code: string; message: string; path?: string; hint?: string } {
  try {
    fn();
  } catch (error) {
    return error as { code: string; message: string; path?: string };
  }
  throw new Error('expected an error');
}

async function caughtAsync(fn: () => Promise<unknown>): Promise<{ code: string; message: string; path?: string }> {
  try {
    await fn();
  } catch (error) {
    return error as { code: string; message: string; path?: string };
  }
  throw new Error('expected an error');
}

describe('tenant-cert plugin: spec.cluster.config', () => {
  let signer: TestSigner;
  let ca: string;
  beforeAll(async () => {
    signer = await createSigner();
    ca = Buffer.from(signer.cert).toString('base64');
  });

  it('accepts the three settings and normalises the URL', () => {
    const config = parseClusterConfig({
      issuerURL: 'https://issuer.example:8443/',
      issuerCA: ca,
      providerClusterID: 'member-1',
    });
    expect(config).toEqual({
      issuerURL: 'https://issuer.example:8443',
      issuerCA: expect.stringContaining('BEGIN CERTIFICATE'),
      providerClusterID: 'member-1',
    });
  });

  it('accepts only providerClusterID (served from an imported Identity)', () => {
    expect(parseClusterConfig({ providerClusterID: 'member-1' })).toEqual({ providerClusterID: 'member-1' });
  });

  it('says to turn on provideClusterInfo when there is no config', () => {
    const error = caught(() => parseClusterConfig(undefined));
    expect(error.code).toBe('ERR_TENANT_CERT_CONFIG');
    expect(error.path).toBe('spec.cluster.config');
    expect(error.hint).toContain('provideClusterInfo: true');
  });

  it.each([
    [{ issuerURL: 'https://i', issuerCA: 'x' }, 'providerClusterID', 'is missing'],
    [{ providerClusterID: 'Member_1' }, 'providerClusterID', 'is not a cluster ID'],
    [{ providerClusterID: 'm', issuerCA: 'eA==' }, 'issuerURL', 'is missing'],
    [
      { providerClusterID: 'm', issuerURL: 'http://issuer:80', issuerCA: 'eA==' },
      'issuerURL',
      'must be an https:// URL',
    ],
    [{ providerClusterID: 'm', issuerURL: 'not a url', issuerCA: 'eA==' }, 'issuerURL', 'is not a URL'],
    [
      { providerClusterID: 'm', issuerURL: 'https://u:p@issuer/', issuerCA: 'eA==' },
      'issuerURL',
      'must not carry credentials',
    ],
    [{ providerClusterID: 'm', issuerURL: 'https://issuer' }, 'issuerCA', 'is missing'],
    [
      { providerClusterID: 'm', issuerURL: 'https://issuer', issuerCA: 'not base64!' },
      'issuerCA',
      'is not valid base64',
    ],
    [
      { providerClusterID: 'm', issuerURL: 'https://issuer', issuerCA: Buffer.from('hello').toString('base64') },
      'issuerCA',
      'holds no PEM certificate',
    ],
    [
      {
        providerClusterID: 'm',
        issuerURL: 'https://issuer',
        issuerCA: Buffer.from('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n').toString('base64'),
      },
      'issuerCA',
      'cannot be parsed',
    ],
    [{ providerClusterID: 'm', issuerURL: 'https://issuer', issuerCA: 7 }, 'issuerCA', 'must be a string'],
  ])('names the bad field: %j', (config, field, text) => {
    const error = caught(() => parseClusterConfig(config));
    expect(error.code).toBe('ERR_TENANT_CERT_CONFIG');
    expect(error.path).toBe(`spec.cluster.config.${field}`);
    expect(error.message).toContain(`spec.cluster.config.${field}`);
    expect(error.message).toContain(text);
  });

  it('checks the optional clientCA the same way', () => {
    const error = caught(() =>
      parseClusterConfig({ providerClusterID: 'm', issuerURL: 'https://issuer', issuerCA: ca, clientCA: '%%%' }),
    );
    expect(error.path).toBe('spec.cluster.config.clientCA');
    expect(
      parseClusterConfig({ providerClusterID: 'm', issuerURL: 'https://issuer', issuerCA: ca, clientCA: ca }).clientCA,
    ).toContain('BEGIN CERTIFICATE');
  });
});

describe('tenant-cert plugin: the key file', () => {
  it('reads a 0600 PKCS#8 key and digests it', () => {
    const key = createKeyFile();
    const read = readKeyFile(key.file);
    expect(read.keyPem).toBe(key.pem);
    expect(read.keyDigest).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each([0o644, 0o640, 0o604, 0o660])('refuses a key with mode %o (others could read it)', (mode) => {
    const key = createKeyFile('ed25519', 0o600);
    chmodSync(key.file, mode);
    const error = caught(() => readKeyFile(key.file));
    expect(error.code).toBe('ERR_TENANT_CERT_KEY_FILE');
    expect(error.message).toContain('accessible by others');
    expect(error.hint).toBe(`chmod 600 ${key.file}`);
  });

  it('refuses a missing key with a hint to make one', () => {
    const error = caught(() => readKeyFile('/nonexistent/key.pem'));
    expect(error.code).toBe('ERR_TENANT_CERT_KEY_FILE');
    expect(error.path).toBe('/nonexistent/key.pem');
    expect(error.hint).toContain('clusterprofile keygen');
  });

  it('refuses a key that is not PKCS#8 (SEC1 "EC PRIVATE KEY")', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpc-tc-'));
    const file = join(dir, 'ec.pem');
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(file, privateKey.export({ type: 'sec1', format: 'pem' }), { mode: 0o600 });
    const error = caught(() => readKeyFile(file));
    expect(error.code).toBe('ERR_TENANT_CERT_KEY_FILE');
    expect(error.message).toContain('PKCS#8');
  });

  it('refuses a bad --cluster-id before touching the key', () => {
    const error = caught(() =>
      tenantCertSettings(
        { 'cluster-id': 'Bad ID', 'key-file': '/nonexistent' },
        { providerClusterID: 'p' },
        { HOME: '/h' },
        '/',
      ),
    );
    expect(error.code).toBe('ERR_TENANT_CERT_FLAG');
    expect(error.path).toBe('--cluster-id');
  });

  it('puts imported Identities under ~/.kube/clusterprofile/identities unless --identity-dir says otherwise', () => {
    const key = createKeyFile();
    const settings = tenantCertSettings(
      { 'cluster-id': 'c1', 'key-file': key.file },
      { providerClusterID: 'p1' },
      { HOME: '/home/u' },
      '/',
    );
    expect(settings.identityDir).toBe('/home/u/.kube/clusterprofile/identities');
    const flagged = tenantCertSettings(
      { 'cluster-id': 'c1', 'key-file': key.file, 'identity-dir': 'ids' },
      { providerClusterID: 'p1' },
      {},
      '/work',
    );
    expect(flagged.identityDir).toBe('/work/ids');
  });
});

describe('clusterprofile keygen', () => {
  it.each(['ed25519', 'ecdsa-p256', 'rsa-2048'] as const)(
    'writes a 0600 PKCS#8 %s key and returns its public key',
    async (algorithm) => {
      const dir = mkdtempSync(join(tmpdir(), 'cpc-keygen-'));
      const out = join(dir, 'cluster.key');
      const publicPem = await keygen({ out, algorithm });
      expect(statSync(out).mode & 0o777).toBe(0o600);
      const pem = readFileSync(out, 'utf8');
      expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
      const derived = createPublicKey(createPrivateKey(pem)).export({ type: 'spki', format: 'pem' }).toString();
      expect(publicPem).toBe(derived);
      expect(publicPem).toMatch(/^-----BEGIN PUBLIC KEY-----/);
      const type = createPrivateKey(pem).asymmetricKeyType;
      expect(type).toBe(algorithm === 'ed25519' ? 'ed25519' : algorithm === 'ecdsa-p256' ? 'ec' : 'rsa');
      // The plugin accepts what keygen writes.
      expect(readKeyFile(out).keyPem).toBe(pem);
    },
  );

  it('refuses to overwrite a key without --force and leaves it intact', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpc-keygen-'));
    const out = join(dir, 'cluster.key');
    await keygen({ out });
    const before = readFileSync(out, 'utf8');
    const error = await caughtAsync(() => keygen({ out }));
    expect(error.code).toBe('ERR_KEYGEN_EXISTS');
    expect(readFileSync(out, 'utf8')).toBe(before);
    await keygen({ out, force: true });
    expect(readFileSync(out, 'utf8')).not.toBe(before);
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  it('reports an unwritable destination with a code', async () => {
    const error = await caughtAsync(() => keygen({ out: '/nonexistent-dir/cluster.key' }));
    expect(error.code).toBe('ERR_KEYGEN_WRITE');
  });
});
