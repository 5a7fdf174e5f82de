// buildCsr writes its PKCS#10 requests by hand (src/wire/tenant-cert/der.ts + node:crypto): byte for byte what @peculiar/x509, which
// built them before, writes for the same key and subject — and what openssl-compatible readers accept.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { buildCsr, parseCsrSync } from '../../src/wire/tenant-cert/csr.js';
import { decodeObjectIdentifier, objectIdentifier, splitSigned } from '../../src/wire/tenant-cert/der.js';
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

// Found by the differential fuzz test (test/fuzz/der-target.ts), each where @peculiar/asn1-csr and we disagreed.
describe('DER the fuzz test found us reading wrong', () => {
  it('decodes an OID whose first subidentifier takes two bytes, and refuses one cut short or padded', () => {
    expect(decodeObjectIdentifier(objectIdentifier('2.5.4.3').subarray(2))).toBe('2.5.4.3');
    // 2.10804.10: 80 + 10804 = 10884 = 0x85 0x04 in base 128 (read as 2.53.4.10 before).
    expect(decodeObjectIdentifier(Buffer.from([0xd5, 0x04, 0x0a]))).toBe('2.10804.10');
    // commonName with a dangling continuation byte: read as 2.5.4.3 before.
    expect(() => decodeObjectIdentifier(Buffer.from([0x55, 0x04, 0x03, 0x83]))).toThrow(RangeError);
    expect(() => decodeObjectIdentifier(Buffer.from([0x55, 0x80, 0x04]))).toThrow(RangeError);
    expect(() => decodeObjectIdentifier(Buffer.alloc(0))).toThrow(RangeError);
  });

  it('refuses a signature algorithm that is not a SEQUENCE, and a subject value that is not UTF-8', async () => {
    const key = keys.ed25519();
    const { der } = await buildCsr(key, { commonName: 'consumer-1' });
    const parts = splitSigned(der);
    // The AlgorithmIdentifier's tag 0x30 → 0x46 (APPLICATION 6): the signature used to verify all the same.
    const at = der.indexOf(Buffer.from([0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70]), parts.signed.length);
    const retagged = Buffer.from(der);
    retagged[at] = 0x46;
    expect(parseCsrSync(der).signatureValid).toBe(true);
    expect(parseCsrSync(retagged).signatureValid).toBe(false);
    const cn = der.indexOf(Buffer.from('consumer-1'));
    const latin1 = Buffer.from(der);
    latin1[cn - 2] = 0x0c; // PrintableString → UTF8String
    latin1[cn] = 0xe9; // 'c' → a lone Latin-1 é: not UTF-8
    expect(() => parseCsrSync(latin1)).toThrow(expect.objectContaining({ code: 'ERR_TENANT_BAD_PEM' }));
    // An empty value names nothing (X.520: SIZE (1..MAX)); read as an empty organization before.
    const { der: empty } = await buildCsr(key, { commonName: 'consumer-1', organizations: [''] });
    expect(() => parseCsrSync(empty)).toThrow(expect.objectContaining({ code: 'ERR_TENANT_BAD_PEM' }));
  });

  it('refuses a short length written in long form, or a long form with a leading zero byte', async () => {
    const { der } = await buildCsr(keys.ed25519(), { commonName: 'consumer-1' });
    expect(parseCsrSync(der).commonNames).toEqual(['consumer-1']);
    // The request info's length (byte 3: 0x30 <len> 0x30 <info len>) in long form: 0x81 <len>, the outer one plus one.
    const infoLength = der[3]!;
    expect(infoLength).toBeLessThan(0x80);
    const longForm = Buffer.concat([Buffer.from([0x30, der[1]! + 1, 0x30, 0x81, infoLength]), der.subarray(4)]);
    expect(() => parseCsrSync(longForm)).toThrow(expect.objectContaining({ code: 'ERR_TENANT_BAD_PEM' }));
    const leadingZero = Buffer.concat([Buffer.from([0x30, 0x82, 0x00, der[1]!]), der.subarray(2)]);
    expect(() => parseCsrSync(leadingZero)).toThrow(expect.objectContaining({ code: 'ERR_TENANT_BAD_PEM' }));
  });
});
