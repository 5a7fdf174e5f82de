/**
 * The message a consumer signs to prove it holds the cluster key, bound to its context so that a signature is good
 * for exactly one (purpose, provider, consumer, nonce, CSR).
 *
 * Encoding (`context-v1`), every field length-prefixed so no two different contexts share bytes:
 * ```text
 * message = field(PURPOSE) || field(providerClusterID) || field(consumerClusterID) || field(nonce) || field(SHA-256(CSR DER))
 * field(x) = uint32 big-endian byte length of x || x
 * PURPOSE  = "clusterprofile-credentials/tenant-cert/v1 tenant signature"   (UTF-8)
 * ```
 * String fields are their UTF-8 bytes; `nonce` is the 88-character base64 string exactly as the issuer gave it;
 * the CSR hash is over the DER of the PKCS#10 request (so PEM line wrapping does not matter).
 *
 * The nonce request (`POST /v1/nonces`) is signed with the same key over the same encoding, with its own purpose tag
 * (so neither signature can be passed off as the other):
 * ```text
 * nonceRequestMessage = field(NONCE_REQUEST_PURPOSE) || field(providerClusterID) || field(consumerClusterID) || field(timestamp)
 * NONCE_REQUEST_PURPOSE = "clusterprofile-credentials/tenant-cert/v1 nonce request"   (UTF-8)
 * ```
 * `timestamp` is the RFC 3339 string exactly as sent in the request body.
 *
 * `liqo-nonce` (Liqo compatibility, only when the issuer enables it): the message is the UTF-8 bytes of the nonce
 * string alone, as Liqo's `liqoctl generate tenant` signs it. It binds nothing else: a signed nonce can be paired with
 * any CSR, which is why the issuer refuses it by default.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { formatTimestamp } from '../../base/exec-credential.js';
import { signBytes, verifyBytes } from './keys.js';
import type { NonceRequest, SignatureFormat } from './protocol.js';

export const SIGNATURE_PURPOSE = 'clusterprofile-credentials/tenant-cert/v1 tenant signature';
export const NONCE_REQUEST_PURPOSE = 'clusterprofile-credentials/tenant-cert/v1 nonce request';

export interface TenantContext {
  providerClusterID: string;
  consumerClusterID: string;
  /** The nonce string as issued (88 characters of standard base64). */
  nonce: string;
  /** DER of the PKCS#10 certification request. */
  csrDer: Uint8Array;
}

function field(bytes: Uint8Array): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

/**
 * The exact bytes a Tenant's signature covers.
 *
 * @example
 * ```ts
 * const bytes = tenantMessage({ providerClusterID: 'p1', consumerClusterID: 'c1', nonce, csrDer }, 'context-v1');
 * ```
 */
export function tenantMessage(context: TenantContext, format: SignatureFormat = 'context-v1'): Buffer {
  if (format === 'liqo-nonce') {
    return Buffer.from(context.nonce, 'utf8');
  }
  const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
  return Buffer.concat([
    field(utf8(SIGNATURE_PURPOSE)),
    field(utf8(context.providerClusterID)),
    field(utf8(context.consumerClusterID)),
    field(utf8(context.nonce)),
    field(createHash('sha256').update(context.csrDer).digest()),
  ]);
}

/** Signs a Tenant's context with the consumer's cluster key; returns the raw signature bytes. */
export function signTenant(
  privateKey: KeyObject,
  context: TenantContext,
  format: SignatureFormat = 'context-v1',
): Buffer {
  return signBytes(privateKey, tenantMessage(context, format));
}

/** True when `signature` is the consumer's signature over this context in this format. Never throws. */
export function verifyTenant(
  publicKey: KeyObject,
  context: TenantContext,
  signature: Uint8Array,
  format: SignatureFormat = 'context-v1',
): boolean {
  return verifyBytes(publicKey, tenantMessage(context, format), signature);
}

export interface NonceRequestContext {
  providerClusterID: string;
  consumerClusterID: string;
  /** RFC 3339, exactly as sent. */
  timestamp: string;
}

/** The exact bytes a nonce request's signature covers. */
export function nonceRequestMessage(context: NonceRequestContext): Buffer {
  const utf8 = (text: string): Buffer => Buffer.from(text, 'utf8');
  return Buffer.concat([
    field(utf8(NONCE_REQUEST_PURPOSE)),
    field(utf8(context.providerClusterID)),
    field(utf8(context.consumerClusterID)),
    field(utf8(context.timestamp)),
  ]);
}

/**
 * A signed `POST /v1/nonces` body: the consumer proves it holds its registered key, so nobody else can make the
 * issuer retire its outstanding nonces.
 *
 * @example
 * ```ts
 * const body = signNonceRequest(privateKey, { providerClusterID: 'p1', consumerClusterID: 'c1' }, new Date());
 * ```
 */
export function signNonceRequest(
  privateKey: KeyObject,
  ids: { providerClusterID: string; consumerClusterID: string },
  at: Date,
): NonceRequest {
  const context = {
    providerClusterID: ids.providerClusterID,
    consumerClusterID: ids.consumerClusterID,
    timestamp: formatTimestamp(at.getTime()),
  };
  return { ...context, signature: signBytes(privateKey, nonceRequestMessage(context)).toString('base64') };
}

/** True when `signature` is the consumer's signature over this nonce request context. Never throws. */
export function verifyNonceRequest(publicKey: KeyObject, context: NonceRequestContext, signature: Uint8Array): boolean {
  return verifyBytes(publicKey, nonceRequestMessage(context), signature);
}
