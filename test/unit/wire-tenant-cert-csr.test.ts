// buildCsr writes its PKCS#10 requests by hand (src/wire/tenant-cert/der.ts + node:crypto): byte for byte what @peculiar/x509, which
// built them before, writes for the same key and subject — and what openssl-compatible readers accept.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildCsr, parseCsrSync } from '../../src/wire/tenant-cert/csr.js';
import { splitSigned } from '../../src/wire/tenant-cert/der.js';
import { toCryptoKeyPair, webCryptoAlgorithm } from '../../src/wire/tenant-cert/keys.js';
import { x509 } from '../../src/wire/tenant-cert/x509.js';

async function peculiar(privateKey: KeyObject, commonName: string, organizations: string[]) {
  const request = await x509.Pkcs10CertificateRequestGenerator.create({
    name: new x509.Name([...organizations.map((o) => ({ O: [o] })), { CN: [commonName] }]),
    keys: toCryptoKeyPair(privateKey),
    signingAlgorithm: webCryptoAlgorithm(privateKey),
  });
  return { der: Buffer.from(request.rawData), pem: request.toString('pem') };
}

const keys = {
  ed25519: () => generateKeyPairSync('ed25519').privateKey,
  'ecdsa-p256': () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey,
  'rsa-2048': () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
};

describe('buildCsr', () => {
  it.each([
    ['consumer-1', []],
    ['consumer-1', ['liqo.io']],
    ['hub', ['team-a', 'fleet:readers', 'ünïcode', 'under_score', 'a b (c)']],
  ])('Ed25519 %s %j: the same bytes and PEM as @peculiar/x509', async (commonName, organizations) => {
    const privateKey = keys.ed25519();
    const ours = await buildCsr(privateKey, { commonName, organizations });
    const theirs = await peculiar(privateKey, commonName, organizations);
    expect(ours.der.toString('hex')).toBe(theirs.der.toString('hex'));
    expect(ours.pem).toBe(theirs.pem);
  });

  it.each(['ecdsa-p256', 'rsa-2048'] as const)(
    '%s: the same request info and algorithm as @peculiar/x509; a valid self-signature',
    async (type) => {
      const privateKey = keys[type]();
      const ours = await buildCsr(privateKey, { commonName: 'consumer-1', organizations: ['g1'] });
      const theirs = await peculiar(privateKey, 'consumer-1', ['g1']);
      const a = splitSigned(ours.der);
      const b = splitSigned(theirs.der);
      expect(a.signed.toString('hex')).toBe(b.signed.toString('hex'));
      expect([a.algorithm, a.algorithmParameters?.toString('hex')]).toEqual([
        b.algorithm,
        b.algorithmParameters?.toString('hex'),
      ]);
      const parsed = parseCsrSync(ours.pem);
      expect(parsed).toMatchObject({
        commonNames: ['consumer-1'],
        organizations: ['g1'],
        signatureValid: true,
        extensions: [],
        otherAttributes: [],
      });
    },
  );
});
