/**
 * A cached client certificate's own validity, read on every cache hit: the runtime serves an entry holding
 * `clientCertificateData` only while the certificate itself says it is valid, whatever the entry's
 * `expirationTimestamp` (an edited, restored or corrupted cache, a clock that was wrong when the entry was written).
 *
 * Read by hand from the DER (base64 and a few TLVs, no node:crypto): X509Certificate would load OpenSSL's decoders
 * and WebCrypto on a path that otherwise costs little more than starting Node (docs/explanation/plugin-startup.md).
 * The runtime imports this module only for an entry that holds a certificate: a token's hit does not load it.
 */
import { formatTimestamp } from '../base/exec-credential.js';
import { children, readElement, type DerElement } from '../wire/tenant-cert/der.js';

/**
 * How far a certificate's notBefore may lie ahead of the local clock and still be served (the same tolerance the
 * tenant-cert provider gives a certificate the issuer hands out): an issuer whose clock is a little ahead must not
 * make every call a miss.
 */
export const NOT_BEFORE_TOLERANCE_MS = 5 * 60_000;

/** notBefore and notAfter in epoch ms. */
export interface CertificateValidity {
  notBefore: number;
  notAfter: number;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/;

/**
 * The validity of the first certificate of a PEM bundle (the leaf), or undefined when there is no certificate or its
 * DER does not have the shape RFC 5280 §4.1 gives it.
 */
export function certificateValidity(pem: string): CertificateValidity | undefined {
  const block = PEM_CERTIFICATE.exec(pem);
  if (block === null) return undefined;
  try {
    const der = Buffer.from(block[1]!.replace(/\s+/g, ''), 'base64');
    const certificate = readElement(der);
    if (certificate.tag !== 0x30) return undefined;
    const tbs = children(certificate.value)[0];
    if (tbs?.tag !== 0x30) return undefined;
    const fields = children(tbs.value);
    // [0] version (absent for v1), serialNumber, signature, issuer, validity.
    const validity = fields[fields[0]?.tag === 0xa0 ? 4 : 3];
    if (validity?.tag !== 0x30) return undefined;
    const [from, to, extra] = children(validity.value);
    if (from === undefined || to === undefined || extra !== undefined) return undefined;
    const notBefore = decodeTime(from);
    const notAfter = decodeTime(to);
    return notBefore === undefined || notAfter === undefined ? undefined : { notBefore, notAfter };
  } catch {
    return undefined;
  }
}

/**
 * Why a certificate is not to be served at `now` for `minRemainingMs` more — notBefore more than
 * {@link NOT_BEFORE_TOLERANCE_MS} ahead, notAfter `minRemainingMs` away or less, a validity that cannot be read —
 * or undefined when it is to be served.
 */
export function staleness(pem: string, now: Date, minRemainingMs: number): string | undefined {
  const validity = certificateValidity(pem);
  if (validity === undefined) return 'is not a certificate whose validity can be read';
  const at = now.getTime();
  if (validity.notAfter - at <= minRemainingMs)
    return `expires at ${formatTimestamp(validity.notAfter)}, within ${minRemainingMs / 1000} s of the clock (${formatTimestamp(at)})`;
  if (validity.notBefore - NOT_BEFORE_TOLERANCE_MS > at)
    return `is valid only from ${formatTimestamp(validity.notBefore)}, ahead of the clock (${formatTimestamp(at)})`;
  return undefined;
}

/** UTCTime (`YYMMDDHHMMSSZ`, 1950–2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`), as RFC 5280 §4.1.2.5 allows them. */
function decodeTime(element: DerElement): number | undefined {
  const text = element.value.toString('latin1');
  let digits: string;
  if (element.tag === 0x17 && /^\d{12}Z$/.test(text)) {
    const year = Number(text.slice(0, 2));
    digits = `${year < 50 ? 20 : 19}${text.slice(0, 12)}`;
  } else if (element.tag === 0x18 && /^\d{14}Z$/.test(text)) {
    digits = text.slice(0, 14);
  } else {
    return undefined;
  }
  const part = (start: number, length: number): number => Number(digits.slice(start, start + length));
  const [year, month, day, hour, minute, second] = [
    part(0, 4),
    part(4, 2),
    part(6, 2),
    part(8, 2),
    part(10, 2),
    part(12, 2),
  ];
  const time = Date.UTC(year, month - 1, day, hour, minute, second);
  const check = new Date(time);
  // Date.UTC rolls 31 February over into March: such a time is not a time.
  return check.getUTCMonth() === month - 1 && check.getUTCDate() === day && hour < 24 && minute < 60 && second < 60
    ? time
    : undefined;
}
