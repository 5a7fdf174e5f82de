/**
 * X.509 certificates the issuer makes: its two CAs (serving, client), its HTTPS serving certificate and the client
 * certificates of the embedded signer. Encoded with ../wire/tenant-cert/der.ts and signed with node:crypto (ECDSA
 * P-256 / SHA-256): cheap enough for the issuer's hot path.
 */
import { createHash, createPublicKey, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { ipv6Bytes } from '../base/ip.js';
import {
  bitString,
  booleanTrue,
  explicit,
  name,
  objectIdentifier,
  octetString,
  sequence,
  time,
  tlv,
  unsignedInteger,
  children,
  readElement,
} from '../wire/tenant-cert/der.js';
import { OID } from '../wire/tenant-cert/csr.js';
import type { GrantedSubject } from '../wire/tenant-cert/protocol.js';

const ECDSA_WITH_SHA256 = sequence(objectIdentifier('1.2.840.10045.4.3.2'));
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';

/** A CA the issuer holds: certificate, key and the bits of it every issued certificate repeats. */
export interface CertificateAuthority {
  certificatePem: string;
  key: KeyObject;
  /** DER of the CA's subject Name (the issuer Name of what it signs). */
  subjectDer: Buffer;
  /** The CA's subject key identifier (the authority key identifier of what it signs). */
  keyId: Buffer;
}

function extension(oid: string, critical: boolean, value: Buffer): Buffer {
  return sequence(objectIdentifier(oid), ...(critical ? [booleanTrue()] : []), octetString(value));
}

/** RFC 7093 §2 method 1: the leftmost 160 bits of SHA-256 of the subjectPublicKey bits. */
function keyIdentifier(spki: Buffer): Buffer {
  const [, subjectPublicKey] = children(readElement(spki).value);
  return createHash('sha256')
    .update(subjectPublicKey?.value.subarray(1) ?? spki)
    .digest()
    .subarray(0, 20);
}

function pem(label: string, der: Buffer): string {
  const body = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${body}-----END ${label}-----\n`;
}

function serialNumber(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f || 0x01; // positive, 16 bytes, never leading zero
  return unsignedInteger(bytes);
}

interface CertificateFields {
  issuerDer: Buffer;
  subjectDer: Buffer;
  spkiDer: Buffer;
  notBefore: Date;
  notAfter: Date;
  extensions: Buffer[];
  signingKey: KeyObject;
}

function buildCertificate(fields: CertificateFields): Buffer {
  const tbs = sequence(
    explicit(0, unsignedInteger(Buffer.from([2]))),
    serialNumber(),
    ECDSA_WITH_SHA256,
    fields.issuerDer,
    sequence(time(fields.notBefore), time(fields.notAfter)),
    fields.subjectDer,
    fields.spkiDer,
    explicit(3, sequence(...fields.extensions)),
  );
  const signature = sign('sha256', tbs, { key: fields.signingKey, dsaEncoding: 'der' });
  return sequence(tbs, ECDSA_WITH_SHA256, bitString(signature));
}

// keyUsage BIT STRINGs (unused-bit count, then the bits).
const KU_CA = tlv(0x03, Buffer.from([0x01, 0x86])); // digitalSignature, keyCertSign, cRLSign
const KU_DIGITAL_SIGNATURE = tlv(0x03, Buffer.from([0x07, 0x80]));
const KU_DIGITAL_SIGNATURE_KEY_ENCIPHERMENT = tlv(0x03, Buffer.from([0x05, 0xa0]));

export interface CreatedKeyAndCertificate {
  certificatePem: string;
  keyPem: string;
}

/** A new self-signed ECDSA P-256 CA valid for `lifetimeMs` from `now` (backdated an hour for clock skew). */
export function createCertificateAuthority(
  commonName: string,
  now: Date,
  lifetimeMs: number,
): CreatedKeyAndCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spkiDer = publicKey.export({ type: 'spki', format: 'der' });
  const subjectDer = name([{ oid: OID.commonName, value: commonName }]);
  const keyId = keyIdentifier(spkiDer);
  const der = buildCertificate({
    issuerDer: subjectDer,
    subjectDer,
    spkiDer,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + lifetimeMs),
    extensions: [
      extension('2.5.29.19', true, sequence(booleanTrue(), unsignedInteger(Buffer.from([0])))),
      extension('2.5.29.15', true, KU_CA),
      extension('2.5.29.14', false, octetString(keyId)),
    ],
    signingKey: privateKey,
  });
  return {
    certificatePem: pem('CERTIFICATE', der),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/** Reads a CA written by {@link createCertificateAuthority}. */
export function loadCertificateAuthority(certificatePem: string, key: KeyObject): CertificateAuthority {
  const der = pemToDer(certificatePem, 'CERTIFICATE');
  const [tbs] = children(readElement(der).value);
  const fields = children(tbs?.value ?? Buffer.alloc(0));
  // version, serial, signature, issuer, validity, subject, spki, ...
  const subject = fields[5];
  const spki = fields[6];
  if (subject === undefined || spki === undefined) {
    throw new RangeError('not an X.509 v3 certificate');
  }
  // A key that is not the certificate's would sign certificates that nothing trusting this CA accepts.
  if (!createPublicKey(key).export({ type: 'spki', format: 'der' }).equals(Buffer.from(spki.raw))) {
    throw new RangeError('the private key is not the key of the certificate');
  }
  return { certificatePem, key, subjectDer: Buffer.from(subject.raw), keyId: keyIdentifier(Buffer.from(spki.raw)) };
}

export function pemToDer(text: string, label: string): Buffer {
  const match = new RegExp(`-----BEGIN ${label}-----([\\s\\S]+?)-----END ${label}-----`).exec(text);
  if (match?.[1] === undefined) {
    throw new RangeError(`no PEM ${label}`);
  }
  return Buffer.from(match[1].replace(/\s+/g, ''), 'base64');
}

/** The HTTPS certificate of the issuer: serverAuth, the SANs given (IP addresses and DNS names). */
export function issueServingCertificate(
  ca: CertificateAuthority,
  sans: readonly string[],
  now: Date,
  lifetimeMs: number,
): CreatedKeyAndCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spkiDer = publicKey.export({ type: 'spki', format: 'der' });
  const generalNames = sans.map((san) => {
    const family = isIP(san);
    if (family === 4) {
      return tlv(0x87, Buffer.from(san.split('.').map(Number)));
    }
    if (family === 6) {
      return tlv(0x87, ipv6Bytes(san));
    }
    return tlv(0x82, Buffer.from(san, 'ascii'));
  });
  const der = buildCertificate({
    issuerDer: ca.subjectDer,
    subjectDer: name([{ oid: OID.commonName, value: sans[0] ?? 'clusterprofile-issuer' }]),
    spkiDer,
    notBefore: new Date(now.getTime() - 3_600_000),
    notAfter: new Date(now.getTime() + lifetimeMs),
    extensions: [
      extension('2.5.29.19', true, sequence()),
      extension('2.5.29.15', true, KU_DIGITAL_SIGNATURE),
      extension(OID.extKeyUsage, false, sequence(objectIdentifier(SERVER_AUTH))),
      extension(OID.subjectAltName, false, sequence(...generalNames)),
      extension('2.5.29.35', false, sequence(tlv(0x80, ca.keyId))),
    ],
    signingKey: ca.key,
  });
  return {
    certificatePem: pem('CERTIFICATE', der),
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

export interface ClientCertificateRequest {
  /** The requested key, SPKI DER (from the CSR). */
  spkiDer: Buffer;
  subject: GrantedSubject;
  notBefore: Date;
  notAfter: Date;
}

/**
 * A client certificate decided by the issuer: subject O = groups (in order), CN = consumer ID; key usage
 * digitalSignature (+ keyEncipherment for RSA keys), extended key usage clientAuth only, not a CA, no SANs.
 */
export function issueClientCertificate(
  ca: CertificateAuthority,
  request: ClientCertificateRequest,
): { certificatePem: string; der: Buffer } {
  const keyType = createPublicKey({ key: request.spkiDer, format: 'der', type: 'spki' }).asymmetricKeyType;
  const subjectDer = name([
    ...request.subject.organizations.map((value) => ({ oid: OID.organization, value })),
    { oid: OID.commonName, value: request.subject.commonName },
  ]);
  const der = buildCertificate({
    issuerDer: ca.subjectDer,
    subjectDer,
    spkiDer: request.spkiDer,
    notBefore: request.notBefore,
    notAfter: request.notAfter,
    extensions: [
      extension('2.5.29.15', true, keyType === 'rsa' ? KU_DIGITAL_SIGNATURE_KEY_ENCIPHERMENT : KU_DIGITAL_SIGNATURE),
      extension(OID.extKeyUsage, false, sequence(objectIdentifier(OID.clientAuth))),
      extension('2.5.29.19', true, sequence()),
      extension('2.5.29.35', false, sequence(tlv(0x80, ca.keyId))),
    ],
    signingKey: ca.key,
  });
  return { certificatePem: pem('CERTIFICATE', der), der };
}
