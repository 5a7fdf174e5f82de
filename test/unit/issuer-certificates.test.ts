import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createCertificateAuthority,
  issueClientCertificate,
  issueServingCertificate,
  loadCertificateAuthority,
} from '../../src/issuer/certificates.js';
import { generateClusterKeyPair, KEY_ALGORITHMS } from '../../src/wire/tenant-cert/keys.js';
import { x509 } from '../../src/wire/tenant-cert/x509.js';

const NOW = new Date('2026-03-01T12:00:00Z');

describe('issuer certificates', () => {
  const created = createCertificateAuthority('clusterprofile client CA p1', NOW, 10 * 365 * 86_400_000);
  const ca = loadCertificateAuthority(created.certificatePem, createPrivateKey(created.keyPem));
  const caCert = new X509Certificate(created.certificatePem);

  it('the CA is a self-signed CA', () => {
    expect(caCert.ca).toBe(true);
    expect(caCert.subject).toBe('CN=clusterprofile client CA p1');
    expect(caCert.verify(caCert.publicKey)).toBe(true);
    expect(caCert.checkIssued(caCert)).toBe(true);
  });

  it.each(KEY_ALGORITHMS)('%s: a client certificate says what the issuer decided, signed by the CA', (algorithm) => {
    const pair = generateClusterKeyPair(algorithm);
    const spkiDer = createPublicKey(pair.publicKeyPem).export({ type: 'spki', format: 'der' });
    const notBefore = new Date(NOW.getTime() - 300_000);
    const notAfter = new Date(NOW.getTime() + 86_400_000);
    const issued = issueClientCertificate(ca, {
      spkiDer,
      subject: { commonName: 'c1', organizations: ['g1', 'g2'] },
      notBefore,
      notAfter,
    });
    const cert = new X509Certificate(issued.certificatePem);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.subject.split('\n')).toEqual(['O=g1', 'O=g2', 'CN=c1']);
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(cert.subjectAltName).toBeUndefined();
    expect(new Date(cert.validFrom).getTime()).toBe(notBefore.getTime());
    expect(new Date(cert.validTo).getTime()).toBe(notAfter.getTime());
    expect(cert.publicKey.export({ type: 'spki', format: 'der' })).toEqual(spkiDer);
    // An independent parser reads the same.
    const parsed = new x509.X509Certificate(issued.certificatePem);
    expect(parsed.getExtension(x509.KeyUsagesExtension)?.usages).toBe(
      algorithm === 'rsa-2048'
        ? x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment
        : x509.KeyUsageFlags.digitalSignature,
    );
    expect(parsed.getExtension(x509.BasicConstraintsExtension)?.ca).toBe(false);
    expect(parsed.getExtension(x509.AuthorityKeyIdentifierExtension)?.keyId).toBe(
      new x509.X509Certificate(created.certificatePem).getExtension(x509.SubjectKeyIdentifierExtension)?.keyId,
    );
  });

  it('a serving certificate carries the IP and DNS SANs', () => {
    const serving = issueServingCertificate(ca, ['127.0.0.1', 'localhost', '::1'], NOW, 365 * 86_400_000);
    const cert = new X509Certificate(serving.certificatePem);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBe('::1');
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
  });

  it('an IPv6 SAN with an embedded IPv4 tail (--san ::ffff:10.0.0.1) is its 16 bytes', () => {
    const serving = issueServingCertificate(ca, ['::ffff:10.0.0.1', '64:ff9b::192.0.2.33'], NOW, 365 * 86_400_000);
    const der = new X509Certificate(serving.certificatePem).raw;
    // iPAddress [7] IMPLICIT OCTET STRING, 16 bytes: ::ffff:0a00:0001 and 64:ff9b::c000:0221.
    const mapped = Buffer.from('871000000000000000000000ffff0a000001', 'hex');
    const nat64 = Buffer.from('87100064ff9b0000000000000000c0000221', 'hex');
    expect(der.includes(mapped)).toBe(true);
    expect(der.includes(nat64)).toBe(true);
    expect(new X509Certificate(serving.certificatePem).checkIP('::ffff:10.0.0.1')).toBe('::ffff:10.0.0.1');
  });

  it('dates after 2049 are GeneralizedTime', () => {
    const pair = generateClusterKeyPair('ed25519');
    const spkiDer = createPublicKey(pair.publicKeyPem).export({ type: 'spki', format: 'der' });
    const notAfter = new Date('2051-01-01T00:00:00Z');
    const cert = new X509Certificate(
      issueClientCertificate(ca, {
        spkiDer,
        subject: { commonName: 'c1', organizations: [] },
        notBefore: NOW,
        notAfter,
      }).certificatePem,
    );
    expect(new Date(cert.validTo).getTime()).toBe(notAfter.getTime());
  });
});
