/**
 * Checks a certificate handed to us (by the issuer, or in an imported Identity) before it is served, and computes
 * when the client must come back for a new one. Pure: the clock and the measured clock offset are parameters.
 */
import { createPublicKey, type KeyObject, X509Certificate } from 'node:crypto';
import { CredentialsError } from '../../../base/errors.js';
import { NOT_BEFORE_TOLERANCE_MS } from '../../../plugin/certificate-validity.js';

/**
 * How far in the future a NotBefore may lie (after correcting for the measured offset) before we call it skew: the
 * runtime's tolerance for a cached certificate, so that what is issued is also served from the cache.
 */
export { NOT_BEFORE_TOLERANCE_MS };

export interface CertificateExpectations {
  /** Our cluster ID: the certificate's CN must be exactly this. */
  clusterID: string;
  /** Our private key (its public half must be the certificate's key). */
  privateKey: KeyObject;
  /** The CA(s) one of which must have signed the certificate (the issuer's client CA), when known. */
  clientCA?: readonly X509Certificate[];
  /** The current local time. */
  now: Date;
  /**
   * The issuer's clock minus ours in ms (from the issuer's `Date` header); 0 when unknown. Positive: the issuer
   * (and the API servers trusting it, presumably on the same clock) is ahead.
   */
  clockOffsetMs?: number;
  /** The credential must stay valid at least this long (ms) after `now`. */
  minRemainingMs: number;
  /** Where the certificate came from, for messages (`the issuer`, `the imported Identity FILE`). */
  source: string;
  /**
   * Imported certificates cannot be renewed by us: past the 2/3 point, serve them anyway with a renewal time shortly
   * before NotAfter (instead of failing), as long as they stay valid for `minRemainingMs`.
   */
  allowPastRenewal?: boolean;
}

export interface CheckedCertificate {
  certificate: X509Certificate;
  /** PEM of the leaf certificate (what goes into `clientCertificateData`, before any chain). */
  pem: string;
  notBefore: Date;
  notAfter: Date;
  /**
   * When the client must renew, on our clock: 2/3 into the certificate's own lifetime (NotBefore → NotAfter),
   * moved earlier by the offset when the issuer's clock is ahead — never later.
   */
  renewAt: Date;
}

function bad(message: string, source: string, hint?: string): CredentialsError {
  return new CredentialsError('ERR_TENANT_CERT_BAD_CERTIFICATE', `the certificate from ${source} ${message}`, {
    ...(hint === undefined ? {} : { hint }),
  });
}

/** The CN of an X509Certificate subject (`CN=a\nO=b`), or undefined. Exactly one CN is accepted. */
export function commonName(certificate: X509Certificate): string | undefined {
  const names = certificate.subject
    .split('\n')
    .filter((line) => line.startsWith('CN='))
    .map((line) => line.slice(3));
  return names.length === 1 ? names[0] : undefined;
}

/** The renewal point: `notBefore + 2/3 (notAfter - notBefore)`, rounded down to the second (RFC 3339 output). */
export function twoThirdsPoint(notBefore: Date, notAfter: Date): Date {
  const lifetime = notAfter.getTime() - notBefore.getTime();
  const at = notBefore.getTime() + Math.floor((lifetime * 2) / 3);
  return new Date(Math.floor(at / 1000) * 1000);
}

/**
 * Verifies `pem` (a leaf certificate, possibly followed by a chain) against the expectations and returns it with its
 * renewal time. Throws ERR_TENANT_CERT_BAD_CERTIFICATE (wrong subject, key, signer, expired) or
 * ERR_TENANT_CERT_CLOCK_SKEW (the certificate looks valid but our clock disagrees too much with the issuer's).
 */
export function checkCertificate(pem: string, expect: CertificateExpectations): CheckedCertificate {
  const first = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(pem);
  if (first === null) {
    throw bad('is not a PEM certificate', expect.source);
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(first[0]);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_BAD_CERTIFICATE',
      `the certificate from ${expect.source} cannot be parsed: ${(cause as Error).message}`,
      { cause },
    );
  }
  const cn = commonName(certificate);
  if (cn !== expect.clusterID) {
    throw bad(
      `is for CN ${JSON.stringify(cn ?? certificate.subject)}, not for our cluster ID ${JSON.stringify(expect.clusterID)}`,
      expect.source,
    );
  }
  // Compared as keys (no export: OpenSSL's encoder is not needed on a miss otherwise).
  if (!createPublicKey(expect.privateKey).equals(certificate.publicKey)) {
    throw bad(
      'certifies a different public key than our --key-file',
      expect.source,
      'was the key file replaced after the Identity was made?',
    );
  }
  if (expect.clientCA !== undefined && expect.clientCA.length > 0) {
    const signedByCA = expect.clientCA.some((ca) => certificate.checkIssued(ca) && certificate.verify(ca.publicKey));
    if (!signedByCA) {
      throw bad("is not signed by the issuer's client CA", expect.source);
    }
  }
  const notBefore = certificate.validFromDate;
  const notAfter = certificate.validToDate;
  if (!(notAfter.getTime() > notBefore.getTime())) {
    throw bad('has an empty validity period', expect.source);
  }
  const offset = expect.clockOffsetMs ?? 0;
  const now = expect.now.getTime();
  // The certificate's validity on our clock: as the API server (on the issuer's clock) sees it.
  const notAfterLocal = notAfter.getTime() - offset;
  const notBeforeLocal = notBefore.getTime() - offset;
  if (notAfterLocal <= now) {
    throw bad(`expired at ${notAfter.toISOString()}`, expect.source);
  }
  if (notBeforeLocal > now + NOT_BEFORE_TOLERANCE_MS) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_CLOCK_SKEW',
      `the certificate from ${expect.source} is valid only from ${notBefore.toISOString()}, but our clock says ${expect.now.toISOString()}`,
      { hint: 'check the clocks of this machine and the issuer (NTP)' },
    );
  }
  const twoThirds = twoThirdsPoint(notBefore, notAfter).getTime();
  let renewAt = new Date(twoThirds - Math.max(0, offset));
  if (renewAt.getTime() - now < expect.minRemainingMs && expect.allowPastRenewal === true) {
    const late = Math.floor((notAfterLocal - expect.minRemainingMs) / 1000) * 1000;
    if (late - now >= expect.minRemainingMs) {
      renewAt = new Date(late);
    }
  }
  if (renewAt.getTime() - now < expect.minRemainingMs) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_CLOCK_SKEW',
      `the certificate from ${expect.source} (valid ${notBefore.toISOString()} to ${notAfter.toISOString()}) is already due for renewal by our clock (${expect.now.toISOString()}${offset === 0 ? '' : `, issuer clock offset ${Math.round(offset / 1000)} s`})`,
      {
        hint: 'check the clocks of this machine and the issuer (NTP), or ask the issuer for a longer certificate lifetime',
      },
    );
  }
  return { certificate, pem: `${certificate.toString().trim()}\n`, notBefore, notAfter, renewAt };
}
