import { X509Certificate, createPublicKey } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildCsr } from '../../src/wire/tenant-cert/csr.js';
import {
  encodeBase64,
  generateClusterKeyPair,
  KEY_ALGORITHMS,
  parsePrivateKeyPem,
  signBytes,
} from '../../src/wire/tenant-cert/keys.js';
import type { IdentityDocument, TenantDocument } from '../../src/wire/tenant-cert/protocol.js';
import {
  customCsrPem,
  issuerFixture,
  tenantWithCsr,
  buildTenant,
  type IssuerFixture,
} from '../helpers/issuer-fixtures.js';
import { x509 } from '../../src/wire/tenant-cert/x509.js';

let f: IssuerFixture;
afterEach(async () => {
  await f?.close();
});

function certificateOf(identity: { spec: { authParams: { signedCRT: string } } }): X509Certificate {
  return new X509Certificate(Buffer.from(identity.spec.authParams.signedCRT, 'base64'));
}

describe('issuer: the happy path', () => {
  it.each(KEY_ALGORITHMS)('%s: issues a client certificate whose subject the issuer decided', async (algorithm) => {
    f = await issuerFixture({ groups: ['tenants', 'tenant:{clusterID}'], apiServer: 'https://api.example:6443' });
    const key = await f.consumer('c1', algorithm, ['extra']);
    const nonce = await f.issuer.issueNonce(f.nonceRequest('c1'));
    expect(nonce.nonce).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    expect(Buffer.from(nonce.nonce, 'base64')).toHaveLength(64);
    expect(nonce.subject).toEqual({ commonName: 'c1', organizations: ['tenants', 'tenant:c1', 'extra'] });
    expect(new Date(nonce.expiresAt).getTime() - f.clock.now().getTime()).toBe(60_000);
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: nonce.nonce,
    });
    const accepted = await f.issuer.acceptTenant(JSON.parse(JSON.stringify(tenant)));
    const identity = accepted.identity as IdentityDocument;
    expect(identity.spec).toMatchObject({
      clusterID: 'p1',
      consumerClusterID: 'c1',
      authParams: { apiServer: 'https://api.example:6443' },
    });
    const certificate = certificateOf(identity);
    expect(certificate.subject.split('\n')).toEqual(['O=tenants', 'O=tenant:c1', 'O=extra', 'CN=c1']);
    expect(certificate.checkIssued(new X509Certificate(f.clientCaPem))).toBe(true);
    expect(certificate.keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    expect(certificate.subjectAltName).toBeUndefined();
    // NotBefore backdated 5 minutes, NotAfter = lifetime.
    expect(new Date(certificate.validFrom).getTime()).toBe(f.clock.now().getTime() - 300_000);
    expect(new Date(certificate.validTo).getTime()).toBe(f.clock.now().getTime() + 86_400_000);
    expect(certificate.publicKey.export({ type: 'spki', format: 'der' })).toEqual(
      createPublicKey(key).export({ type: 'spki', format: 'der' }),
    );
  });

  it('accepts a CSR that asks for a subset of the granted groups and benign client-cert extensions', async () => {
    f = await issuerFixture({ groups: ['tenants'] });
    const key = await f.consumer('c1');
    const nonce = await f.nonce('c1');
    const csr = await customCsrPem(key, {
      name: 'O=tenants, CN=c1',
      extensions: [
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
        new x509.BasicConstraintsExtension(false),
      ],
    });
    await expect(f.issuer.acceptTenant(tenantWithCsr(key, 'c1', nonce, csr))).resolves.toBeDefined();
  });
});

describe('issuer: every check refuses with its own code', () => {
  beforeEach(async () => {
    f = await issuerFixture({ groups: ['tenants'] });
  });

  async function honest(
    consumer = 'c1',
  ): Promise<{ key: ReturnType<typeof parsePrivateKeyPem>; tenant: TenantDocument; nonce: string }> {
    const key = (await f.trust.get(consumer)) === undefined ? await f.consumer(consumer) : undefined;
    const privateKey = key ?? parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    const nonce = await f.nonce(consumer);
    return {
      key: privateKey,
      nonce,
      tenant: await buildTenant({ privateKey, consumerClusterID: consumer, providerClusterID: 'p1', nonce }),
    };
  }

  it('unknown consumer: no nonce, no certificate', async () => {
    const key = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    await expect(f.issuer.issueNonce(f.nonceRequest('stranger', { key }))).rejects.toMatchObject({
      code: 'ERR_TENANT_UNKNOWN_CONSUMER',
    });
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'stranger',
      providerClusterID: 'p1',
      nonce: Buffer.alloc(64).toString('base64'),
    });
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({
      code: 'ERR_TENANT_UNKNOWN_CONSUMER',
      path: '$.spec.clusterID',
    });
  });

  it('a nonce that was never issued', async () => {
    const key = await f.consumer('c1');
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: Buffer.alloc(64, 1).toString('base64'),
    });
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_UNKNOWN' });
  });

  it('a reused nonce (replay of an accepted Tenant)', async () => {
    const { tenant } = await honest();
    await f.issuer.acceptTenant(tenant);
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_REUSED' });
  });

  it('two concurrent Tenants with one nonce: exactly one certificate', async () => {
    const { tenant } = await honest();
    const results = await Promise.allSettled([
      f.issuer.acceptTenant(tenant),
      f.issuer.acceptTenant(tenant),
      f.issuer.acceptTenant(tenant),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)).toEqual(
      ['ERR_TENANT_NONCE_REUSED', 'ERR_TENANT_NONCE_REUSED'],
    );
  });

  it('an expired nonce', async () => {
    const { tenant } = await honest();
    f.clock.advance(60_001);
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_EXPIRED' });
  });

  it('a nonce issued for another consumer', async () => {
    await f.consumer('c2');
    const key = await f.consumer('c1');
    const nonceOfC2 = await f.nonce('c2');
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: nonceOfC2,
    });
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_WRONG_CONSUMER' });
  });

  it('a failed attempt spends the nonce: the corrected Tenant needs a new one', async () => {
    const { key, nonce, tenant } = await honest();
    const forged = { ...tenant, spec: { ...tenant.spec, signature: encodeBase64(Buffer.alloc(64, 9)) } };
    await expect(f.issuer.acceptTenant(forged)).rejects.toMatchObject({ code: 'ERR_TENANT_SIGNATURE_INVALID' });
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_REUSED' });
    expect(f.nonces.get(nonce)?.consumed).toBe(true);
    const fresh = await f.nonce('c1');
    await expect(
      f.issuer.acceptTenant(
        await buildTenant({ privateKey: key, consumerClusterID: 'c1', providerClusterID: 'p1', nonce: fresh }),
      ),
    ).resolves.toBeDefined();
  });

  it('malformed input spends nothing', async () => {
    const { nonce, tenant } = await honest();
    await expect(
      f.issuer.acceptTenant({ ...tenant, spec: { ...tenant.spec, csr: 'not base64!' } }),
    ).rejects.toMatchObject({ code: 'ERR_TENANT_BAD_BASE64', path: '$.spec.csr' });
    await expect(
      f.issuer.acceptTenant({
        ...tenant,
        spec: { ...tenant.spec, publicKey: encodeBase64('-----BEGIN PUBLIC KEY-----\nxx\n-----END PUBLIC KEY-----\n') },
      }),
    ).rejects.toMatchObject({
      code: 'ERR_TENANT_BAD_PEM',
      path: '$.spec.publicKey',
    });
    await expect(f.issuer.acceptTenant({ ...tenant, kind: 'Identity' })).rejects.toMatchObject({
      code: 'ERR_TENANT_INVALID_DOCUMENT',
    });
    await expect(f.issuer.acceptTenant('garbage')).rejects.toMatchObject({ code: 'ERR_TENANT_INVALID_DOCUMENT' });
    expect(f.nonces.get(nonce)?.consumed).toBe(false);
    await expect(f.issuer.acceptTenant(tenant)).resolves.toBeDefined();
  });

  it('a Tenant for another provider', async () => {
    const { key, nonce } = await honest();
    const tenant = await buildTenant({ privateKey: key, consumerClusterID: 'c1', providerClusterID: 'p2', nonce });
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_PROVIDER_MISMATCH' });
  });

  it('a wrong signature: made for another provider, consumer or CSR', async () => {
    const { key, tenant } = await honest();
    // The signature covers the CSR it came with; pair it with another (valid, same-key) CSR.
    const variant = await buildCsr(key, { commonName: 'c1', organizations: ['tenants'] });
    const swapped = { ...tenant, spec: { ...tenant.spec, csr: encodeBase64(variant.pem) } };
    await expect(f.issuer.acceptTenant(swapped)).rejects.toMatchObject({
      code: 'ERR_TENANT_SIGNATURE_INVALID',
      path: '$.spec.signature',
    });
  });

  it('the Liqo signature (over the nonce alone) is refused unless --liqo-compat', async () => {
    const { key, nonce, tenant } = await honest();
    const liqoSigned = {
      ...tenant,
      spec: {
        ...tenant.spec,
        signatureFormat: 'liqo-nonce' as const,
        signature: encodeBase64(signBytes(key, Buffer.from(nonce))),
      },
    };
    await expect(f.issuer.acceptTenant(liqoSigned)).rejects.toMatchObject({ code: 'ERR_TENANT_LIQO_COMPAT_DISABLED' });
  });

  it('a Tenant key that is not the trusted key (key swap), and a CSR for another key', async () => {
    await f.consumer('c1');
    const attacker = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    const nonce = await f.nonce('c1');
    const swapped = await buildTenant({
      privateKey: attacker,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce,
    });
    await expect(f.issuer.acceptTenant(swapped)).rejects.toMatchObject({ code: 'ERR_TENANT_KEY_NOT_TRUSTED' });

    const trustedKey = await f.consumer('c3');
    const nonce3 = await f.nonce('c3');
    const csrForAttacker = (await buildCsr(attacker, { commonName: 'c3' })).der;
    const tenant = tenantWithCsr(trustedKey, 'c3', nonce3, csrForAttacker);
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_CSR_KEY_MISMATCH' });
  });

  it('a CSR whose self-signature is invalid', async () => {
    const key = await f.consumer('c1');
    const nonce = await f.nonce('c1');
    const der = Buffer.from(await customCsrPem(key, {}));
    der[der.length - 5]! ^= 0xff; // inside the signature BIT STRING
    await expect(f.issuer.acceptTenant(tenantWithCsr(key, 'c1', nonce, der))).rejects.toMatchObject({
      code: 'ERR_TENANT_CSR_SIGNATURE_INVALID',
    });
  });

  it.each([
    ['another CN', 'CN=admin', 'ERR_TENANT_CSR_SUBJECT'],
    ['two CNs', 'CN=c1, CN=c1', 'ERR_TENANT_CSR_SUBJECT'],
    ['no CN', 'O=tenants', 'ERR_TENANT_CSR_SUBJECT'],
    ['an OU', 'OU=x, CN=c1', 'ERR_TENANT_CSR_SUBJECT'],
    ['system:masters', 'O=system:masters, CN=c1', 'ERR_TENANT_CSR_GROUPS'],
    ['a group not granted', 'O=tenants, O=admins, CN=c1', 'ERR_TENANT_CSR_GROUPS'],
    ['liqo.io without --liqo-compat', 'O=liqo.io, CN=c1', 'ERR_TENANT_CSR_GROUPS'],
  ])('a CSR asking for %s', async (_what, name, code) => {
    const key = await f.consumer('c1');
    const nonce = await f.nonce('c1');
    await expect(
      f.issuer.acceptTenant(tenantWithCsr(key, 'c1', nonce, await customCsrPem(key, { name }))),
    ).rejects.toMatchObject({ code });
  });

  it.each([
    [
      'DNS SANs',
      () => new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: 'kubernetes.default' }]),
      'ERR_TENANT_CSR_SANS',
    ],
    [
      'IP SANs',
      () => new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '10.0.0.1' }]),
      'ERR_TENANT_CSR_SANS',
    ],
    ['a CA', () => new x509.BasicConstraintsExtension(true), 'ERR_TENANT_CSR_EXTENSIONS'],
    [
      'certificate signing',
      () => new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign),
      'ERR_TENANT_CSR_EXTENSIONS',
    ],
    [
      'server auth',
      () => new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      'ERR_TENANT_CSR_EXTENSIONS',
    ],
    [
      'an unknown extension',
      () => new x509.Extension('1.2.3.4.5', false, new Uint8Array([5, 0])),
      'ERR_TENANT_CSR_EXTENSIONS',
    ],
  ])('a CSR asking for %s', async (_what, extension, code) => {
    const key = await f.consumer('c1');
    const nonce = await f.nonce('c1');
    await expect(
      f.issuer.acceptTenant(tenantWithCsr(key, 'c1', nonce, await customCsrPem(key, { extensions: [extension()] }))),
    ).rejects.toMatchObject({ code });
  });

  it('a CSR with a challengePassword attribute', async () => {
    const key = await f.consumer('c1');
    const nonce = await f.nonce('c1');
    const csr = await customCsrPem(key, { attributes: [new x509.ChallengePasswordAttribute('secret')] });
    await expect(f.issuer.acceptTenant(tenantWithCsr(key, 'c1', nonce, csr))).rejects.toMatchObject({
      code: 'ERR_TENANT_CSR_EXTENSIONS',
    });
  });
});

describe('issuer: Liqo compatibility', () => {
  it('accepts a Liqo Tenant (raw key, O=liqo.io, signature over the nonce) and answers a Liqo Identity', async () => {
    f = await issuerFixture({ liqoCompat: true });
    const key = await f.consumer('cl-consumer');
    await f.nonce('cl-consumer'); // an older one, not signed
    const nonce = await f.nonce('cl-consumer');
    const csr = await buildCsr(key, { commonName: 'cl-consumer', organizations: ['liqo.io'] });
    const raw = Buffer.from(createPublicKey(key).export({ format: 'jwk' }).x as string, 'base64url');
    const tenant = {
      apiVersion: 'authentication.liqo.io/v1beta1',
      kind: 'Tenant',
      metadata: {
        creationTimestamp: null,
        labels: { 'liqo.io/remote-cluster-id': 'cl-consumer' },
        name: 'cl-consumer',
      },
      spec: {
        clusterID: 'cl-consumer',
        csr: encodeBase64(csr.pem),
        publicKey: raw.toString('base64'),
        signature: encodeBase64(signBytes(key, Buffer.from(nonce))),
      },
    };
    const accepted = await f.issuer.acceptTenant(tenant);
    expect(accepted.identity).toMatchObject({
      apiVersion: 'authentication.liqo.io/v1beta1',
      kind: 'Identity',
      spec: { clusterID: 'p1', type: 'ControlPlane', namespace: 'liqo-tenant-cl-consumer' },
    });
    // liqo.io was tolerated in the CSR, but the certificate carries what the issuer grants (nothing here).
    expect(certificateOf(accepted.identity).subject).toBe('CN=cl-consumer');
    expect(f.nonces.get(nonce)?.consumed).toBe(true);
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_SIGNATURE_INVALID' });
  });

  it('without compat, a Liqo Tenant is refused', async () => {
    f = await issuerFixture();
    const key = await f.consumer('c1');
    const csr = await buildCsr(key, { commonName: 'c1' });
    const tenant = {
      apiVersion: 'authentication.liqo.io/v1beta1',
      kind: 'Tenant',
      spec: {
        clusterID: 'c1',
        csr: encodeBase64(csr.pem),
        publicKey: encodeBase64(createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString()),
        signature: encodeBase64(Buffer.alloc(64)),
      },
    };
    await expect(f.issuer.acceptTenant(tenant)).rejects.toMatchObject({ code: 'ERR_TENANT_LIQO_COMPAT_DISABLED' });
  });
});

describe('issuer: a signer that copies the CSR subject (Kubernetes)', () => {
  it('requires the CSR to ask for exactly the granted groups', async () => {
    const signed: string[] = [];
    f = await issuerFixture({ groups: ['tenants'] });
    const inner = f.issuer.options.signer;
    (f.issuer.options as { signer: unknown }).signer = {
      name: 'kubernetes',
      copiesCsrSubject: true,
      async sign(request: Parameters<typeof inner.sign>[0]) {
        signed.push(request.consumerClusterID);
        return inner.sign(request);
      },
    };
    const key = await f.consumer('c1');
    const nonce = await f.nonce('c1');
    await expect(
      f.issuer.acceptTenant(
        await buildTenant({ privateKey: key, consumerClusterID: 'c1', providerClusterID: 'p1', nonce }),
      ),
    ).rejects.toMatchObject({
      code: 'ERR_TENANT_CSR_GROUPS',
    });
    const nonce2 = await f.issuer.issueNonce(f.nonceRequest('c1'));
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: nonce2.nonce,
      organizations: nonce2.subject.organizations,
    });
    await expect(f.issuer.acceptTenant(tenant)).resolves.toBeDefined();
    expect(signed).toEqual(['c1']);
  });
});
