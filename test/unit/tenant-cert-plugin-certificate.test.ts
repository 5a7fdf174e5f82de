import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkCertificate, twoThirdsPoint } from '../../src/providers/tenant-cert/consumer/certificate.js';
import { createKeyFile, createSigner, type TestKey, type TestSigner } from '../helpers/tenant-cert-plugin.js';

// A frozen clock: certificates are made around it.
const NOW = new Date('2026-06-01T12:00:00Z');
const H = 3600_000;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

function caught(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected an error');
}

describe('tenant-cert plugin: checking the returned certificate', () => {
  let signer: TestSigner;
  let other: TestSigner;
  let key: TestKey;
  let otherKey: TestKey;
  // Issued 5 minutes ago (backdated), 24 h lifetime.
  let good: string;
  beforeAll(async () => {
    signer = await createSigner('client-ca');
    other = await createSigner('someone-else');
    key = createKeyFile('ed25519');
    otherKey = createKeyFile('ecdsa-p256');
    good = await signer.issue(key.publicKey, {
      cn: 'consumer-1',
      notBefore: at(-5 * 60_000),
      notAfter: at(24 * H - 5 * 60_000),
    });
  });

  const expectations = () => ({
    clusterID: 'consumer-1',
    privateKey: key.privateKey,
    clientCA: [new X509Certificate(signer.cert)],
    now: NOW,
    minRemainingMs: 60_000,
    source: 'the issuer',
  });

  it("renews at 2/3 of the certificate's own lifetime (NotBefore → NotAfter)", () => {
    const checked = checkCertificate(good, expectations());
    expect(checked.notBefore).toEqual(at(-5 * 60_000));
    expect(checked.renewAt).toEqual(new Date(at(-5 * 60_000).getTime() + 16 * H));
    expect(checked.renewAt.getTime()).toBeLessThanOrEqual(
      twoThirdsPoint(checked.notBefore, checked.notAfter).getTime(),
    );
    expect(checked.pem).toMatch(/^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n$/);
  });

  it('refuses a certificate for another CN', async () => {
    const pem = await signer.issue(key.publicKey, { cn: 'consumer-2', notBefore: at(-H), notAfter: at(H) });
    const error = caught(() => checkCertificate(pem, expectations()));
    expect(error.code).toBe('ERR_TENANT_CERT_BAD_CERTIFICATE');
    expect(error.message).toContain('"consumer-2"');
  });

  it('refuses a certificate for another key', async () => {
    const pem = await signer.issue(otherKey.publicKey, { cn: 'consumer-1', notBefore: at(-H), notAfter: at(H) });
    const error = caught(() => checkCertificate(pem, expectations()));
    expect(error.code).toBe('ERR_TENANT_CERT_BAD_CERTIFICATE');
    expect(error.message).toContain('different public key');
  });

  it('refuses a certificate not signed by the client CA', async () => {
    const pem = await other.issue(key.publicKey, { cn: 'consumer-1', notBefore: at(-H), notAfter: at(H) });
    const error = caught(() => checkCertificate(pem, expectations()));
    expect(error.code).toBe('ERR_TENANT_CERT_BAD_CERTIFICATE');
    expect(error.message).toContain('client CA');
  });

  it('refuses an expired certificate', async () => {
    const pem = await signer.issue(key.publicKey, { cn: 'consumer-1', notBefore: at(-2 * H), notAfter: at(-H) });
    const error = caught(() => checkCertificate(pem, expectations()));
    expect(error.code).toBe('ERR_TENANT_CERT_BAD_CERTIFICATE');
    expect(error.message).toContain('expired');
  });

  it('refuses garbage', () => {
    expect(caught(() => checkCertificate('hello', expectations())).code).toBe('ERR_TENANT_CERT_BAD_CERTIFICATE');
    const broken = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    expect(caught(() => checkCertificate(broken, expectations())).message).toContain('cannot be parsed');
  });

  it('issuer clock ahead: renews earlier by the offset', () => {
    const checked = checkCertificate(good, { ...expectations(), clockOffsetMs: 10 * 60_000 });
    expect(checked.renewAt).toEqual(new Date(at(-5 * 60_000).getTime() + 16 * H - 10 * 60_000));
  });

  it('issuer clock behind: never renews later than the 2/3 point', () => {
    const checked = checkCertificate(good, { ...expectations(), clockOffsetMs: -10 * 60_000 });
    expect(checked.renewAt).toEqual(new Date(at(-5 * 60_000).getTime() + 16 * H));
  });

  it('our clock far behind: a certificate valid only in the future is clock skew, not served', async () => {
    const pem = await signer.issue(key.publicKey, { cn: 'consumer-1', notBefore: at(2 * H), notAfter: at(26 * H) });
    const error = caught(() => checkCertificate(pem, expectations()));
    expect(error.code).toBe('ERR_TENANT_CERT_CLOCK_SKEW');
    expect(error.message).toContain('our clock says');
  });

  it('tolerates a NotBefore a little in the future (a few minutes of skew)', async () => {
    const pem = await signer.issue(key.publicKey, {
      cn: 'consumer-1',
      notBefore: at(2 * 60_000),
      notAfter: at(24 * H),
    });
    expect(checkCertificate(pem, expectations()).renewAt.getTime()).toBeGreaterThan(NOW.getTime());
  });

  it('our clock far ahead: a certificate already past its renewal point is clock skew', async () => {
    const pem = await signer.issue(key.publicKey, { cn: 'consumer-1', notBefore: at(-20 * H), notAfter: at(4 * H) });
    const error = caught(() => checkCertificate(pem, expectations()));
    expect(error.code).toBe('ERR_TENANT_CERT_CLOCK_SKEW');
  });

  it('an imported certificate past 2/3 is still served until shortly before it expires', async () => {
    const pem = await signer.issue(key.publicKey, { cn: 'consumer-1', notBefore: at(-20 * H), notAfter: at(4 * H) });
    const checked = checkCertificate(pem, { ...expectations(), allowPastRenewal: true });
    expect(checked.renewAt).toEqual(at(4 * H - 60_000));
  });
});
