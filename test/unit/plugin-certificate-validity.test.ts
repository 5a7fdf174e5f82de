/**
 * The runtime's check of a cached certificate's own validity (src/plugin/certificate-validity.ts), for any provider
 * whose credential carries `clientCertificateData`: the dates it reads are node:crypto's, for UTCTime and
 * GeneralizedTime; an entry whose stamp says valid is a miss once the clock is past the certificate's notAfter (less
 * the margin) or set back before its notBefore (less the tolerance).
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '../../src/base/exec-credential.js';
import { certificateValidity, NOT_BEFORE_TOLERANCE_MS } from '../../src/plugin/certificate-validity.js';
import { obtainCredential, type CredentialProvider } from '../../src/plugin/index.js';
import { createKeyFile, createSigner, type TestKey, type TestSigner } from '../helpers/tenant-cert-plugin.js';

const HOUR = 3_600_000;
const START = Date.UTC(2031, 0, 1);

let signer: TestSigner;
let key: TestKey;

beforeAll(async () => {
  signer = await createSigner('validity-unit-ca');
  key = createKeyFile();
});

describe('certificateValidity', () => {
  it('reads the dates node:crypto reads, before and after 2050 (UTCTime, GeneralizedTime)', async () => {
    for (const [notBefore, notAfter] of [
      [Date.UTC(2026, 2, 4, 5, 6, 7), Date.UTC(2026, 2, 5, 5, 6, 7)],
      [Date.UTC(1999, 11, 31, 23, 59, 59), Date.UTC(2049, 11, 31, 23, 59, 59)],
      [Date.UTC(2049, 5, 1), Date.UTC(2050, 0, 1, 0, 0, 1)],
    ] as const) {
      const pem = await signer.issue(key.publicKey, {
        cn: 'c',
        notBefore: new Date(notBefore),
        notAfter: new Date(notAfter),
      });
      const x509 = new X509Certificate(pem);
      expect(certificateValidity(`${pem}${signer.cert}`)).toEqual({
        notBefore: x509.validFromDate.getTime(),
        notAfter: x509.validToDate.getTime(),
      });
    }
  });

  it('is undefined for what is not a certificate', () => {
    for (const text of [
      '',
      'garbage',
      '-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----',
      '-----BEGIN CERTIFICATE-----\nMAMCAQA=\n-----END CERTIFICATE-----',
      `-----BEGIN CERTIFICATE-----\n${Buffer.from([0x30, 0x82, 0xff, 0xff]).toString('base64')}\n-----END CERTIFICATE-----`,
    ]) {
      expect(certificateValidity(text), text).toBeUndefined();
    }
  });
});

describe('obtainCredential with a certificate that ends before its stamp', () => {
  it('serves it while the certificate is valid; a miss past notAfter or with the clock set back before notBefore', async () => {
    let issues = 0;
    // A provider whose stamp is wrong on purpose: a week ahead, whatever the certificate says.
    const provider: CredentialProvider<Record<string, never>, object> = {
      name: 'validity-unit',
      description: 'a certificate valid from START for two hours, stamped a week ahead',
      flags: {},
      settings: () => ({}),
      cacheKey: () => ({}),
      async issue(_settings, context) {
        issues++;
        return {
          status: {
            clientCertificateData: await signer.issue(key.publicKey, {
              cn: 'c',
              notBefore: new Date(START),
              notAfter: new Date(START + 2 * HOUR),
            }),
            clientKeyData: key.pem,
            expirationTimestamp: formatTimestamp(context.now().getTime() + 7 * 24 * HOUR),
          },
        };
      },
    };
    const cacheDir = mkdtempSync(join(tmpdir(), 'cpc-validity-'));
    const at = (time: number) =>
      obtainCredential(provider, {
        input: { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false } },
        flags: {},
        env: {},
        now: () => new Date(time),
        signal: new AbortController().signal,
        cacheDir,
      });

    expect((await at(START + HOUR)).fromCache).toBe(false);
    expect((await at(START + HOUR + 1000)).fromCache).toBe(true);
    // Inside the runtime's 60 s margin before notAfter: a miss, though the stamp says a week more.
    expect((await at(START + 2 * HOUR - 59_000)).fromCache).toBe(false);
    // The clock set back: just inside the tolerance it is served, an hour before notBefore it is not.
    expect((await at(START - NOT_BEFORE_TOLERANCE_MS + 1000)).fromCache).toBe(true);
    expect((await at(START - HOUR)).fromCache).toBe(false);
    expect(issues).toBe(3);
  });
});
