// The TypeScript document types and builders follow the schemas: what we produce validates, and what the schemas
// refuse is refused with a JSON path.
import { describe, expect, it } from 'vitest';
import { validateDocument } from '../../src/schemas/index.js';
import { buildIdentity, buildLiqoIdentity, buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { generateClusterKeyPair, parsePrivateKeyPem } from '../../src/wire/tenant-cert/keys.js';
import { parseDuration } from '../../src/cli/duration.js';
import { parseListen } from '../../src/issuer/setup.js';
import { issuerFixture } from '../helpers/issuer-fixtures.js';

describe('tenant-cert documents against their schemas', () => {
  it('our Tenant, Identity (both flavours), nonce request/response and a trust record validate', async () => {
    const f = await issuerFixture({ groups: ['g'] });
    try {
      const key = await f.consumer('c1');
      const nonce = await f.issuer.issueNonce(f.nonceRequest('c1'));
      expect(validateDocument('tenant-cert-nonce-response', nonce)).toEqual([]);
      expect(validateDocument('tenant-cert-nonce-request', f.nonceRequest('c1'))).toEqual([]);
      const tenant = await buildTenant({
        privateKey: key,
        consumerClusterID: 'c1',
        providerClusterID: 'p1',
        nonce: nonce.nonce,
      });
      expect(validateDocument('tenant-cert-tenant', tenant)).toEqual([]);
      const accepted = await f.issuer.acceptTenant(tenant);
      expect(validateDocument('tenant-cert-identity', accepted.identity)).toEqual([]);
      const input = {
        providerClusterID: 'p1',
        consumerClusterID: 'c1',
        certificatePem: accepted.certificatePem,
        notBefore: new Date(),
        notAfter: new Date(),
      };
      expect(validateDocument('tenant-cert-identity', buildIdentity(input))).toEqual([]);
      expect(validateDocument('tenant-cert-identity', buildLiqoIdentity(input))).toEqual([]);
      const { readFile } = await import('node:fs/promises');
      const record = JSON.parse(await readFile(`${f.dir}/trusted/c1.json`, 'utf8'));
      expect(validateDocument('issuer-trust-record', record)).toEqual([]);
      expect(
        validateDocument('tenant-cert-error', { code: 'ERR_TENANT_NONCE_REUSED', message: 'x', path: '$.spec.nonce' }),
      ).toEqual([]);
    } finally {
      await f.close();
    }
  });

  it('refusals name the field', async () => {
    const key = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    const tenant = await buildTenant({ privateKey: key, consumerClusterID: 'c1', providerClusterID: 'p1', nonce: 'n' });
    const { csr: _csr, ...withoutCsr } = tenant.spec;
    expect(validateDocument('tenant-cert-tenant', { ...tenant, spec: withoutCsr }).map((i) => i.path)).toContain(
      '$.spec.csr',
    );
    expect(
      validateDocument('tenant-cert-tenant', { ...tenant, spec: { ...tenant.spec, providerClusterID: 'UPPER' } }).map(
        (i) => i.path,
      ),
    ).toContain('$.spec.providerClusterID');
    expect(validateDocument('tenant-cert-nonce-request', { consumerClusterID: '' }).map((i) => i.path)).toContain(
      '$.consumerClusterID',
    );
    expect(validateDocument('tenant-cert-error', { code: 'nope', message: 'x' }).map((i) => i.path)).toContain(
      '$.code',
    );
  });
});

describe('issuer flag parsing', () => {
  it('durations are Go-style and bounded', () => {
    expect(parseDuration('24h', { flag: '--cert-lifetime', min: 0, max: Infinity, code: 'ERR_ISSUER_CONFIG' })).toBe(
      86_400_000,
    );
    expect(parseDuration('1h30m', { flag: '--cert-lifetime', min: 0, max: Infinity, code: 'ERR_ISSUER_CONFIG' })).toBe(
      5_400_000,
    );
    expect(parseDuration('500ms', { flag: '--x', min: 0, max: Infinity, code: 'ERR_ISSUER_CONFIG' })).toBe(500);
    expect(() =>
      parseDuration('24', { flag: '--cert-lifetime', min: 0, max: Infinity, code: 'ERR_ISSUER_CONFIG' }),
    ).toThrow(expect.objectContaining({ code: 'ERR_ISSUER_CONFIG', path: '--cert-lifetime' }));
    expect(() =>
      parseDuration('1m', { flag: '--cert-lifetime', min: 300_000, max: Infinity, code: 'ERR_ISSUER_CONFIG' }),
    ).toThrow(expect.objectContaining({ code: 'ERR_ISSUER_CONFIG' }));
  });

  it('--listen is HOST:PORT or [IPv6]:PORT', () => {
    expect(parseListen('127.0.0.1:8443')).toEqual({ host: '127.0.0.1', port: 8443 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListen(':9000')).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(() => parseListen('localhost')).toThrow(
      expect.objectContaining({ code: 'ERR_ISSUER_CONFIG', path: '--listen' }),
    );
    expect(() => parseListen('h:70000')).toThrow(expect.objectContaining({ code: 'ERR_ISSUER_CONFIG' }));
  });
});
