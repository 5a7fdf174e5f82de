import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  buildTenant,
  readTenant,
  buildIdentity,
  readIdentity,
  buildLiqoIdentity,
} from '../../src/wire/tenant-cert/documents.js';
import { buildCsr, parseCsr } from '../../src/wire/tenant-cert/csr.js';
import {
  decodeBase64,
  generateClusterKeyPair,
  parsePrivateKeyPem,
  parsePublicKey,
  publicKeyPem,
  samePublicKey,
  spkiDer,
  signBytes,
  verifyBytes,
  KEY_ALGORITHMS,
} from '../../src/wire/tenant-cert/keys.js';
import { SIGNATURE_PURPOSE, signTenant, tenantMessage, verifyTenant } from '../../src/wire/tenant-cert/message.js';

const NONCE = Buffer.alloc(64, 7).toString('base64');

describe('tenant-cert keys', () => {
  it.each(KEY_ALGORITHMS)('%s: generated PEMs read back, sign and verify as Liqo does', (algorithm) => {
    const pair = generateClusterKeyPair(algorithm);
    expect(pair.privateKeyPem).toContain('-----BEGIN PRIVATE KEY-----');
    expect(pair.publicKeyPem).toContain('-----BEGIN PUBLIC KEY-----');
    const privateKey = parsePrivateKeyPem(pair.privateKeyPem);
    const publicKey = parsePublicKey(pair.publicKeyPem);
    const signature = signBytes(privateKey, Buffer.from(NONCE));
    expect(verifyBytes(publicKey, Buffer.from(NONCE), signature)).toBe(true);
    expect(verifyBytes(publicKey, Buffer.from(`${NONCE}x`), signature)).toBe(false);
    if (algorithm === 'ed25519') expect(signature).toHaveLength(64);
    if (algorithm === 'ecdsa-p256') expect(signature[0]).toBe(0x30); // ASN.1 SEQUENCE, not r||s
  });

  it.each(KEY_ALGORITHMS)(
    '%s: spkiDer and publicKeyPem are the bytes OpenSSL writes, from the private or the public key',
    (algorithm) => {
      for (let run = 0; run < 8; run++) {
        const pair = generateClusterKeyPair(algorithm);
        const openssl = createPublicKey(pair.publicKeyPem);
        for (const key of [parsePrivateKeyPem(pair.privateKeyPem), openssl]) {
          expect(spkiDer(key)).toEqual(openssl.export({ type: 'spki', format: 'der' }));
          expect(publicKeyPem(key)).toBe(openssl.export({ type: 'spki', format: 'pem' }).toString());
        }
      }
    },
  );

  it('accepts the raw 32-byte Ed25519 public key older Liqo sends, equal to its PEM form', () => {
    const pair = generateClusterKeyPair('ed25519');
    const jwk = createPublicKey(pair.publicKeyPem).export({ format: 'jwk' });
    const raw = Buffer.from(jwk.x as string, 'base64url');
    expect(raw).toHaveLength(32);
    expect(samePublicKey(parsePublicKey(raw), parsePublicKey(pair.publicKeyPem))).toBe(true);
  });

  it('refuses unsupported keys and malformed PEM with stable codes', () => {
    const p384 = createPrivateKey({ key: generateP384(), format: 'pem' });
    expect(() => parsePublicKey(createPublicKey(p384).export({ type: 'spki', format: 'pem' }).toString())).toThrow(
      expect.objectContaining({ code: 'ERR_TENANT_UNSUPPORTED_KEY' }),
    );
    expect(() => parsePublicKey('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n')).toThrow(
      expect.objectContaining({ code: 'ERR_TENANT_BAD_PEM' }),
    );
    expect(() => parsePrivateKeyPem('not a key')).toThrow(expect.objectContaining({ code: 'ERR_TENANT_BAD_PEM' }));
    expect(() => decodeBase64('a-b_', '$.spec.csr')).toThrow(
      expect.objectContaining({ code: 'ERR_TENANT_BAD_BASE64', path: '$.spec.csr' }),
    );
  });
});

function generateP384(): string {
  return generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

describe('tenant-cert message', () => {
  it('is length-prefixed: purpose, provider, consumer, nonce, SHA-256 of the CSR DER', () => {
    const csrDer = Buffer.from('csr');
    const message = tenantMessage({ providerClusterID: 'p1', consumerClusterID: 'c1', nonce: NONCE, csrDer });
    const hash = createHash('sha256').update(csrDer).digest();
    const field = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, (b.length >> 8) & 255, b.length & 255]), b]);
    expect(message).toEqual(
      Buffer.concat([
        field(Buffer.from(SIGNATURE_PURPOSE)),
        field(Buffer.from('p1')),
        field(Buffer.from('c1')),
        field(Buffer.from(NONCE)),
        field(hash),
      ]),
    );
    // Shifting a character between adjacent fields changes the bytes.
    const shifted = tenantMessage({ providerClusterID: 'p1c', consumerClusterID: '1', nonce: NONCE, csrDer });
    expect(shifted.equals(message)).toBe(false);
    expect(
      tenantMessage({ providerClusterID: 'p1', consumerClusterID: 'c1', nonce: NONCE, csrDer }, 'liqo-nonce'),
    ).toEqual(Buffer.from(NONCE));
  });

  it.each(KEY_ALGORITHMS)('%s: a signature binds every field of the context', (algorithm) => {
    const key = parsePrivateKeyPem(generateClusterKeyPair(algorithm).privateKeyPem);
    const context = { providerClusterID: 'p1', consumerClusterID: 'c1', nonce: NONCE, csrDer: Buffer.from('csr') };
    const signature = signTenant(key, context);
    const pub = createPublicKey(key);
    expect(verifyTenant(pub, context, signature)).toBe(true);
    expect(verifyTenant(pub, { ...context, providerClusterID: 'p2' }, signature)).toBe(false);
    expect(verifyTenant(pub, { ...context, consumerClusterID: 'c2' }, signature)).toBe(false);
    expect(verifyTenant(pub, { ...context, nonce: Buffer.alloc(64, 8).toString('base64') }, signature)).toBe(false);
    expect(verifyTenant(pub, { ...context, csrDer: Buffer.from('csr2') }, signature)).toBe(false);
    expect(verifyTenant(pub, context, signature, 'liqo-nonce')).toBe(false);
  });
});

describe('tenant-cert CSR and documents', () => {
  it.each(KEY_ALGORITHMS)(
    '%s: a built CSR carries only CN, its self-signature verifies, its key is ours',
    async (algorithm) => {
      const key = parsePrivateKeyPem(generateClusterKeyPair(algorithm).privateKeyPem);
      const csr = await buildCsr(key, { commonName: 'c1' });
      const parsed = await parseCsr(csr.pem);
      expect(parsed.signatureValid).toBe(true);
      expect(parsed.commonNames).toEqual(['c1']);
      expect(parsed.organizations).toEqual([]);
      expect(parsed.extensions).toEqual([]);
      expect(parsed.otherAttributes).toEqual([]);
      expect(samePublicKey(parsed.publicKey, createPublicKey(key))).toBe(true);
    },
  );

  it('a Tenant round-trips through readTenant and its signature verifies', async () => {
    const key = parsePrivateKeyPem(generateClusterKeyPair('ed25519').privateKeyPem);
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: NONCE,
    });
    const received = await readTenant(JSON.parse(JSON.stringify(tenant)));
    expect(received).toMatchObject({
      flavour: 'clusterprofile',
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: NONCE,
      signatureFormat: 'context-v1',
    });
    expect(
      verifyTenant(
        received.publicKey,
        { providerClusterID: 'p1', consumerClusterID: 'c1', nonce: NONCE, csrDer: received.csr.der },
        received.signature,
      ),
    ).toBe(true);
  });

  it('reads a Liqo Tenant (raw Ed25519 key, O=liqo.io CSR, signature over the nonce)', async () => {
    const key = parsePrivateKeyPem(generateClusterKeyPair('ed25519').privateKeyPem);
    const csr = await buildCsr(key, { commonName: 'cl-consumer', organizations: ['liqo.io'] });
    const raw = Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x as string, 'base64url');
    const received = await readTenant({
      apiVersion: 'authentication.liqo.io/v1beta1',
      kind: 'Tenant',
      metadata: { creationTimestamp: null, name: 'cl-consumer' },
      spec: {
        clusterID: 'cl-consumer',
        csr: Buffer.from(csr.pem).toString('base64'),
        publicKey: raw.toString('base64'),
        signature: signBytes(key, Buffer.from(NONCE)).toString('base64'),
      },
    });
    expect(received).toMatchObject({
      flavour: 'liqo',
      consumerClusterID: 'cl-consumer',
      signatureFormat: 'liqo-nonce',
    });
    expect(received.csr.organizations).toEqual(['liqo.io']);
  });

  it('refuses a Tenant with a bad field, naming it', async () => {
    const key = parsePrivateKeyPem(generateClusterKeyPair('ed25519').privateKeyPem);
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: NONCE,
    });
    await expect(readTenant({ ...tenant, spec: { ...tenant.spec, csr: '%%%' } })).rejects.toMatchObject({
      code: 'ERR_TENANT_BAD_BASE64',
      path: '$.spec.csr',
    });
    await expect(
      readTenant({ ...tenant, spec: { ...tenant.spec, csr: Buffer.from('garbage').toString('base64') } }),
    ).rejects.toMatchObject({
      code: 'ERR_TENANT_BAD_PEM',
      path: '$.spec.csr',
    });
    await expect(readTenant({ ...tenant, spec: { ...tenant.spec, clusterID: 'Not_An_ID' } })).rejects.toMatchObject({
      code: 'ERR_TENANT_INVALID_DOCUMENT',
    });
    await expect(readTenant({ ...tenant, spec: { ...tenant.spec, extra: 'x' } })).rejects.toMatchObject({
      code: 'ERR_TENANT_INVALID_DOCUMENT',
    });
  });

  it('an Identity (ours and Liqo-shaped) reads back', () => {
    const input = {
      providerClusterID: 'p1',
      consumerClusterID: 'c1',
      certificatePem: '-----BEGIN CERTIFICATE-----\nMII=\n-----END CERTIFICATE-----\n',
      notBefore: new Date('2026-01-01T00:00:00Z'),
      notAfter: new Date('2026-01-02T00:00:00Z'),
      apiServer: 'https://127.0.0.1:6443',
    };
    expect(readIdentity(buildIdentity(input))).toMatchObject({
      flavour: 'clusterprofile',
      providerClusterID: 'p1',
      consumerClusterID: 'c1',
      apiServer: 'https://127.0.0.1:6443',
    });
    expect(readIdentity(buildLiqoIdentity(input))).toMatchObject({
      flavour: 'liqo',
      providerClusterID: 'p1',
      consumerClusterID: 'c1',
    });
  });
});
