/**
 * Cluster keys: Ed25519 (default), ECDSA P-256 and RSA-2048, with node:crypto. Private keys are PKCS#8 PEM, public
 * keys SPKI PEM (what `openssl pkey -pubout` writes); a Tenant's publicKey may also be the raw 32-byte Ed25519 key
 * older Liqo versions sent. Signatures, as Liqo makes them: Ed25519 pure (64 bytes), ECDSA ASN.1/DER over SHA-256,
 * RSA PKCS#1 v1.5 over SHA-256.
 */
import {
  createPublicKey,
  generateKeyPairSync,
  sign as cryptoSign,
  verify as cryptoVerify,
  type KeyObject,
  type webcrypto,
} from 'node:crypto';
import { isCredentialsError, type ErrorCode } from '../../base/errors.js';
import { decodePrivateKeyPem } from '../../base/pem-file.js';
import { tenantError } from './protocol.js';

export type KeyAlgorithm = 'ed25519' | 'ecdsa-p256' | 'rsa-2048';
export const KEY_ALGORITHMS: readonly KeyAlgorithm[] = ['ed25519', 'ecdsa-p256', 'rsa-2048'];

export interface GeneratedKeyPair {
  algorithm: KeyAlgorithm;
  /** PKCS#8 PEM. */
  privateKeyPem: string;
  /** SPKI PEM. */
  publicKeyPem: string;
}

/**
 * A new cluster key pair.
 *
 * @example
 * ```ts
 * const { privateKeyPem, publicKeyPem } = generateClusterKeyPair('ed25519');
 * ```
 */
export function generateClusterKeyPair(algorithm: KeyAlgorithm = 'ed25519'): GeneratedKeyPair {
  const publicKeyEncoding = { type: 'spki', format: 'pem' } as const;
  const privateKeyEncoding = { type: 'pkcs8', format: 'pem' } as const;
  let pair: { privateKey: string; publicKey: string };
  if (algorithm === 'ed25519') {
    pair = generateKeyPairSync('ed25519', { publicKeyEncoding, privateKeyEncoding });
  } else if (algorithm === 'ecdsa-p256') {
    pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1', publicKeyEncoding, privateKeyEncoding });
  } else if (algorithm === 'rsa-2048') {
    pair = generateKeyPairSync('rsa', { modulusLength: 2048, publicKeyEncoding, privateKeyEncoding });
  } else {
    return unsupportedAlgorithm(algorithm);
  }
  return { algorithm, privateKeyPem: pair.privateKey, publicKeyPem: pair.publicKey };
}

function unsupportedAlgorithm(algorithm: never): never {
  throw new TypeError(`unsupported key algorithm ${String(algorithm)}`);
}

/** The algorithm of a key, or ERR_TENANT_UNSUPPORTED_KEY (e.g. RSA below 2048 bits, P-384, Ed448). */
export function keyAlgorithm(key: KeyObject, path?: string): KeyAlgorithm {
  const type = key.asymmetricKeyType;
  const details = key.asymmetricKeyDetails ?? {};
  if (type === 'ed25519') {
    return 'ed25519';
  }
  if (type === 'ec' && details.namedCurve === 'prime256v1') {
    return 'ecdsa-p256';
  }
  if (type === 'rsa' && (details.modulusLength ?? 0) >= 2048 && (details.modulusLength ?? 0) <= 8192) {
    return 'rsa-2048';
  }
  const what =
    type === 'ec'
      ? `EC ${String(details.namedCurve)}`
      : type === 'rsa'
        ? `RSA-${String(details.modulusLength)}`
        : String(type);
  throw tenantError(
    'ERR_TENANT_UNSUPPORTED_KEY',
    `${what} keys are not supported: use Ed25519, ECDSA P-256 or RSA (2048 bits or more)`,
    {
      ...(path === undefined ? {} : { path }),
    },
  );
}

/**
 * A cluster's private key from PEM (PKCS#8; the traditional `EC`/`RSA PRIVATE KEY` forms are read too), decoded by
 * the one key reader (base/pem-file.ts): a file that holds anything else is `code` (default `ERR_TENANT_BAD_PEM`)
 * naming `path` and `flag`. Never logs it.
 */
export function parsePrivateKeyPem(
  pem: string,
  path?: string,
  source: { flag?: string; code?: ErrorCode } = {},
): KeyObject {
  const key = decodePrivateKeyPem(pem, {
    file: path ?? 'the private key',
    code: source.code ?? 'ERR_TENANT_BAD_PEM',
    ...(source.flag === undefined ? {} : { flag: source.flag }),
  });
  keyAlgorithm(key, path);
  return key;
}

/**
 * A public key from what a person or a Tenant carries: PEM SPKI text, SPKI DER bytes, or the raw 32-byte Ed25519 key.
 */
export function parsePublicKey(input: string | Uint8Array, path?: string): KeyObject {
  const at = path === undefined ? {} : { path };
  let key: KeyObject;
  try {
    if (typeof input === 'string' || looksLikePem(input)) {
      const text = typeof input === 'string' ? input : Buffer.from(input).toString('utf8');
      if (!/-----BEGIN PUBLIC KEY-----/.test(text)) {
        throw tenantError(
          'ERR_TENANT_BAD_PEM',
          'the public key is not a PEM "PUBLIC KEY" (SPKI, as `openssl pkey -pubout` writes)',
          at,
        );
      }
      key = createPublicKey({ key: text, format: 'pem' });
    } else if (input.length === 32) {
      key = createPublicKey({
        key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(input).toString('base64url') },
        format: 'jwk',
      });
    } else {
      key = createPublicKey({ key: Buffer.from(input), format: 'der', type: 'spki' });
    }
  } catch (cause) {
    if (isCredentialsError(cause)) {
      throw cause;
    }
    throw tenantError(
      'ERR_TENANT_BAD_PEM',
      'the public key cannot be read (expected PEM SPKI, SPKI DER or a raw 32-byte Ed25519 key)',
      {
        ...at,
        cause,
      },
    );
  }
  if (key.type !== 'public') {
    throw tenantError('ERR_TENANT_BAD_PEM', 'expected a public key', at);
  }
  keyAlgorithm(key, path);
  return key;
}

function looksLikePem(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.subarray(0, 64)).toString('latin1').includes('-----BEGIN');
}

// The SPKI DER of an Ed25519 or a P-256 key is a fixed header before the raw public key (RFC 8410, RFC 5480).
const ED25519_SPKI_HEADER = Buffer.from('302a300506032b6570032100', 'hex');
const P256_SPKI_HEADER = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d03010703420004', 'hex');

/**
 * SPKI DER of a public key (or of a private key's public half): the canonical form keys are compared in. Ed25519 and
 * P-256 keys are put together from their JWK export, the same bytes without OpenSSL's encoder, whose first use would
 * add to a plugin's cache miss.
 */
export function spkiDer(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  const type = pub.asymmetricKeyType;
  if (type === 'ed25519') {
    return Buffer.concat([ED25519_SPKI_HEADER, Buffer.from(pub.export({ format: 'jwk' }).x!, 'base64url')]);
  }
  if (type === 'ec' && pub.asymmetricKeyDetails?.namedCurve === 'prime256v1') {
    const { x, y } = pub.export({ format: 'jwk' });
    return Buffer.concat([P256_SPKI_HEADER, Buffer.from(x!, 'base64url'), Buffer.from(y!, 'base64url')]);
  }
  return pub.export({ type: 'spki', format: 'der' });
}

/** The PEM `PUBLIC KEY` of {@link spkiDer}, as OpenSSL writes it (64-character lines). */
export function publicKeyPem(key: KeyObject): string {
  const base64 = spkiDer(key).toString('base64');
  const lines = base64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN PUBLIC KEY-----\n${lines.join('\n')}\n-----END PUBLIC KEY-----\n`;
}

/** True when both are the same public key (compared as SPKI DER, so the raw and PEM Ed25519 forms are equal). */
export function samePublicKey(a: KeyObject, b: KeyObject): boolean {
  const publicA = a.type === 'private' ? createPublicKey(a) : a;
  const publicB = b.type === 'private' ? createPublicKey(b) : b;
  return publicA.equals(publicB);
}

/** Signs as Liqo does for the key's algorithm. */
export function signBytes(privateKey: KeyObject, data: Uint8Array): Buffer {
  const algorithm = keyAlgorithm(privateKey);
  return algorithm === 'ed25519'
    ? cryptoSign(null, data, privateKey)
    : cryptoSign('sha256', data, algorithm === 'ecdsa-p256' ? { key: privateKey, dsaEncoding: 'der' } : privateKey);
}

/** Verifies a signature made by {@link signBytes} (or by openssl / Go with the same conventions). Never throws. */
export function verifyBytes(publicKey: KeyObject, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    const algorithm = keyAlgorithm(publicKey);
    return algorithm === 'ed25519'
      ? cryptoVerify(null, data, publicKey, signature)
      : cryptoVerify(
          'sha256',
          data,
          algorithm === 'ecdsa-p256' ? { key: publicKey, dsaEncoding: 'der' } : publicKey,
          signature,
        );
  } catch {
    return false;
  }
}

/** WebCrypto algorithm parameters of a key, for @peculiar/x509 (signing and key import). */
export function webCryptoAlgorithm(
  key: KeyObject,
): webcrypto.EcKeyImportParams & webcrypto.RsaHashedImportParams & { hash: string } {
  const algorithm = keyAlgorithm(key);
  switch (algorithm) {
    case 'ed25519':
      return { name: 'Ed25519' } as never;
    case 'ecdsa-p256':
      return { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as never;
    case 'rsa-2048':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as never;
  }
}

/** A node KeyObject pair as a WebCrypto CryptoKeyPair (non-extractable private half) for @peculiar/x509. */
export function toCryptoKeyPair(privateKey: KeyObject): webcrypto.CryptoKeyPair {
  const algorithm = webCryptoAlgorithm(privateKey);
  const publicKey = createPublicKey(privateKey);
  return {
    privateKey: privateKey.toCryptoKey(algorithm, false, ['sign']) as webcrypto.CryptoKey,
    publicKey: publicKey.toCryptoKey(algorithm, true, ['verify']) as webcrypto.CryptoKey,
  };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes standard base64 strictly (padding required, no whitespace, no URL alphabet): what Go's
 * base64.StdEncoding writes for a `[]byte` field. ERR_TENANT_BAD_BASE64 otherwise.
 */
export function decodeBase64(value: string, path: string): Buffer {
  if (value.length === 0 || !BASE64.test(value)) {
    throw tenantError('ERR_TENANT_BAD_BASE64', 'not standard base64 (RFC 4648 §4, padded)', { path });
  }
  return Buffer.from(value, 'base64');
}

export function encodeBase64(bytes: Uint8Array | string): string {
  return Buffer.from(bytes).toString('base64');
}
