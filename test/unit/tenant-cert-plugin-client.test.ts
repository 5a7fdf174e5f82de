import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CredentialsError } from '../../src/base/errors.js';
import { clockOffset, toIssuerRequest } from '../../src/providers/tenant-cert/consumer/handshake.js';
import { retryableError, withRetries } from '../../src/providers/tenant-cert/consumer/transport.js';
import { buildNonceRequest } from '../../src/wire/tenant-cert/protocol.js';
import { generateClusterKeyPair, parsePrivateKeyPem } from '../../src/wire/tenant-cert/keys.js';
import { signNonceRequest } from '../../src/wire/tenant-cert/message.js';
import {
  identityFile,
  loadImportedIdentity,
  parseIdentity,
  storeIdentity,
} from '../../src/providers/tenant-cert/consumer/identity.js';
import {
  createKeyFile,
  createSigner,
  liqoIdentityYaml,
  ourIdentity,
  type TestKey,
  type TestSigner,
} from '../helpers/tenant-cert-plugin.js';

/** A fake clock that sleeping advances: retries run instantly and deterministically. */
function clock(start = 1_000_000) {
  let now = start;
  const sleeps: number[] = [];
  return {
    now: () => now,
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

async function caught(fn: () => Promise<unknown>): Promise<CredentialsError> {
  try {
    await fn();
  } catch (error) {
    return error as CredentialsError;
  }
  throw new Error('expected an error');
}

describe('tenant-cert client: retries inside a deadline', () => {
  it('retries a down issuer with growing backoff and succeeds', async () => {
    const c = clock();
    let calls = 0;
    const result = await withRetries(
      async () => {
        calls += 1;
        if (calls < 3)
          throw retryableError('ERR_TENANT_CERT_ISSUER_UNREACHABLE', 'cannot reach the issuer (ECONNREFUSED)');
        return 'identity';
      },
      { deadline: c.now() + 30_000, now: c.now, sleep: c.sleep, random: () => 1 },
    );
    expect(result).toBe('identity');
    expect(calls).toBe(3);
    expect(c.sleeps).toEqual([250, 500]);
  });

  it('gives up at the deadline and says how many attempts were made', async () => {
    const c = clock();
    let calls = 0;
    const error = await caught(() =>
      withRetries(
        async (remaining) => {
          calls += 1;
          c.advance(Math.min(1_000, remaining)); // each attempt takes a second, bounded by what is left (as the client does)
          throw retryableError('ERR_ISSUER_INTERNAL', 'the issuer refused (HTTP 500): boom');
        },
        { deadline: c.now() + 5_000, now: c.now, sleep: c.sleep, random: () => 1, maxAttempts: 100 },
      ),
    );
    expect(error.code).toBe('ERR_ISSUER_INTERNAL');
    expect(error.message).toMatch(/gave up after \d+ attempts/);
    expect(c.now() - 1_000_000).toBeLessThanOrEqual(5_000);
    expect(calls).toBeGreaterThan(1);
  });

  it('stops after maxAttempts', async () => {
    const c = clock();
    let calls = 0;
    await caught(() =>
      withRetries(
        async () => {
          calls += 1;
          throw retryableError('ERR_TENANT_CERT_ISSUER_TIMEOUT', 'the issuer did not answer in time');
        },
        { deadline: c.now() + 600_000, now: c.now, sleep: c.sleep, maxAttempts: 4 },
      ),
    );
    expect(calls).toBe(4);
  });

  it("does not retry a refusal (unknown consumer): one attempt, the issuer's code", async () => {
    const c = clock();
    let calls = 0;
    const error = await caught(() =>
      withRetries(
        async () => {
          calls += 1;
          throw new CredentialsError(
            'ERR_TENANT_UNKNOWN_CONSUMER',
            'the issuer refused (HTTP 403): unknown consumer c9',
          );
        },
        { deadline: c.now() + 30_000, now: c.now, sleep: c.sleep },
      ),
    );
    expect(calls).toBe(1);
    expect(c.sleeps).toEqual([]);
    expect(error.code).toBe('ERR_TENANT_UNKNOWN_CONSUMER');
  });

  it("builds absolute issuer requests from the protocol's specs", () => {
    const key = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    const signed = signNonceRequest(
      key,
      { consumerClusterID: 'c1', providerClusterID: 'p1' },
      new Date('2026-06-01T12:00:00Z'),
    );
    const request = toIssuerRequest('https://issuer.example:8443/base/', buildNonceRequest(signed));
    expect(request.url.href).toBe('https://issuer.example:8443/base/v1/nonces');
    expect(request.method).toBe('POST');
    expect(JSON.parse(request.body ?? '')).toEqual({
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      timestamp: '2026-06-01T12:00:00.000Z',
      signature: signed.signature,
    });
  });

  it("measures the issuer's clock offset from its Date header", () => {
    const received = new Date('2026-06-01T12:00:00Z');
    const response = { status: 201, body: '', url: 'u', headers: { date: 'Mon, 01 Jun 2026 12:10:00 GMT' } };
    expect(clockOffset(response, received)).toBe(10 * 60_000);
    expect(clockOffset({ ...response, headers: {} }, received)).toBe(0);
    expect(clockOffset({ ...response, headers: { date: 'garbage' } }, received)).toBe(0);
  });
});

describe('tenant-cert plugin: imported Identities', () => {
  let signer: TestSigner;
  let key: TestKey;
  let cert: string;
  beforeAll(async () => {
    signer = await createSigner();
    key = createKeyFile();
    cert = await signer.issue(key.publicKey, {
      cn: 'consumer-1',
      notBefore: new Date('2026-01-01T00:00:00Z'),
      notAfter: new Date('2027-01-01T00:00:00Z'),
    });
  });

  it('reads ours (JSON)', () => {
    const parsed = parseIdentity(
      ourIdentity({
        provider: 'member-1',
        consumer: 'consumer-1',
        certPem: cert,
        caPem: signer.cert,
        apiServer: 'https://api:6443',
      }),
      'id.json',
    );
    expect(parsed).toMatchObject({
      format: 'clusterprofile',
      providerClusterID: 'member-1',
      consumerClusterID: 'consumer-1',
      apiServer: 'https://api:6443',
    });
    expect(parsed.certificatePem).toBe(cert);
    expect(parsed.caPem).toBe(signer.cert);
  });

  it("reads Liqo's (YAML), the consumer from spec.namespace", () => {
    const parsed = parseIdentity(
      liqoIdentityYaml({ provider: 'member-1', consumer: 'consumer-1', certPem: cert, apiServer: 'https://api:6443' }),
      'id.yaml',
    );
    expect(parsed).toMatchObject({ format: 'liqo', providerClusterID: 'member-1', consumerClusterID: 'consumer-1' });
  });

  it('refuses a ResourceSlice Identity, bad base64 and non-Identities with a path', () => {
    const slice = (() => {
      try {
        parseIdentity(
          liqoIdentityYaml({ provider: 'member-1', consumer: 'consumer-1', certPem: cert, type: 'ResourceSlice' }),
          'id.yaml',
        );
      } catch (error) {
        return error as CredentialsError;
      }
      return undefined;
    })();
    expect(slice?.path).toBe('$.spec.type');
    const badBase64 = ourIdentity({ provider: 'member-1', consumer: 'consumer-1', certPem: cert }).replace(
      /"signedCRT":"[^"]+"/,
      '"signedCRT":"%%%"',
    );
    expect(() => parseIdentity(badBase64, 'id.json')).toThrow(
      expect.objectContaining({ code: 'ERR_TENANT_BAD_BASE64', path: '$.spec.authParams.signedCRT' }),
    );
    expect(() => parseIdentity('kind: Tenant\napiVersion: v1\n', 'x.yaml')).toThrow(
      expect.objectContaining({ message: expect.stringContaining('x.yaml') }),
    );
    expect(() => parseIdentity('{ not yaml', 'x.yaml')).toThrow(
      expect.objectContaining({ code: 'ERR_TENANT_CERT_IDENTITY_INVALID' }),
    );
  });

  it('stores 0600 in a 0700 directory where the plugin finds it, and refuses a mismatching file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpc-ids-'));
    const text = ourIdentity({ provider: 'member-1', consumer: 'consumer-1', certPem: cert });
    const file = await storeIdentity(dir, parseIdentity(text, 'x'), text);
    expect(file).toBe(identityFile(dir, 'consumer-1', 'member-1'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'consumer-1')).mode & 0o777).toBe(0o700);
    const loaded = await loadImportedIdentity(dir, 'consumer-1', 'member-1');
    expect(loaded?.identity.certificatePem).toBe(cert);
    expect(await loadImportedIdentity(dir, 'consumer-1', 'member-2')).toBeUndefined();
    // A file put under the wrong name is not served for the wrong provider.
    writeFileSync(identityFile(dir, 'consumer-1', 'member-3'), text, { mode: 0o600 });
    await expect(loadImportedIdentity(dir, 'consumer-1', 'member-3')).rejects.toMatchObject({
      code: 'ERR_TENANT_CERT_IDENTITY_INVALID',
    });
  });
});
