/**
 * The issuer's two CAs as both state backends make them — the serving CA (HTTPS to the issuer) and the client CA
 * (the embedded signer's) —: their names and lifetime, and the HTTPS certificate the serving CA issues, re-issued
 * when it lacks a SAN or nears expiry.
 */
import { X509Certificate, createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { issueServingCertificate, type CertificateAuthority } from '../certificates.js';

const DAY = 86_400_000;
export const CA_LIFETIME_MS = 10 * 365 * DAY;
const SERVING_LIFETIME = 365 * DAY;

/** X.520 ub-common-name: a CN is at most 64 characters. */
const MAX_COMMON_NAME = 64;

/**
 * `clusterprofile issuer <what> CA <provider ID>`, made to fit 64 characters: a provider ID too long for it is cut and
 * ends in `~` and 8 hex digits of its SHA-256, so two long IDs with the same start still name different CAs.
 */
export function caCommonName(what: 'serving' | 'client', providerClusterID: string): string {
  const prefix = `clusterprofile issuer ${what} CA `;
  const full = `${prefix}${providerClusterID}`;
  if (full.length <= MAX_COMMON_NAME) {
    return full;
  }
  const tag = `~${createHash('sha256').update(providerClusterID).digest('hex').slice(0, 8)}`;
  return `${prefix}${providerClusterID.slice(0, MAX_COMMON_NAME - prefix.length - tag.length)}${tag}`;
}

export interface ServingMaterial {
  certificatePem: string;
  keyPem: string;
  caPem: string;
}

/** The serving CA's HTTPS certificate for `sans` when `current` (PEM pair) is missing, lacks a SAN or nears expiry. */
export function servingFrom(
  ca: CertificateAuthority,
  current: { certificatePem?: string | undefined; keyPem?: string | undefined },
  sans: readonly string[],
  now: Date,
): ServingMaterial & { fresh: boolean } {
  if (
    current.certificatePem !== undefined &&
    current.keyPem !== undefined &&
    covers(current.certificatePem, sans, now)
  ) {
    return { certificatePem: current.certificatePem, keyPem: current.keyPem, caPem: ca.certificatePem, fresh: false };
  }
  const issued = issueServingCertificate(ca, sans, now, SERVING_LIFETIME);
  return { certificatePem: issued.certificatePem, keyPem: issued.keyPem, caPem: ca.certificatePem, fresh: true };
}

function covers(certificatePem: string, sans: readonly string[], now: Date): boolean {
  try {
    const certificate = new X509Certificate(certificatePem);
    if (new Date(certificate.validTo).getTime() - now.getTime() < 30 * DAY) {
      return false;
    }
    return sans.every((san) =>
      isIP(san) !== 0
        ? certificate.checkIP(san) !== undefined
        : certificate.checkHost(san, { wildcards: false }) !== undefined,
    );
  } catch {
    return false;
  }
}
