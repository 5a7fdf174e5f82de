/**
 * PKCS#10 certification requests: build one with the cluster key (the private key never leaves the process), and
 * read one into plain data the issuer can judge: subject attributes, requested SANs and extensions, other
 * attributes, the public key, and whether the self-signature is valid. Both by hand over ./der.ts and node:crypto:
 * the consumer's cache miss builds one, and loading @peculiar/x509 (with its ASN.1 schema layer and WebCrypto) would
 * cost it more memory and time than building the request.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import {
  bitString,
  children,
  decodeObjectIdentifier,
  objectIdentifier,
  readElement,
  sequence,
  set,
  splitSigned,
  tlv,
  type DerElement,
} from './der.js';
import { tenantError } from './protocol.js';
import { keyAlgorithm, signBytes, spkiDer } from './keys.js';

export const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

export interface CsrSubject {
  commonName: string;
  /** Kubernetes groups. Empty: the issuer decides (the default for our plugin). */
  organizations?: readonly string[];
}

export interface BuiltCsr {
  pem: string;
  der: Buffer;
}

/** The signature algorithm of a CSR signed by {@link signBytes} with a key of each type (RSA's with NULL parameters). */
const SIGNED_WITH: Readonly<Record<ReturnType<typeof keyAlgorithm>, Buffer>> = {
  ed25519: sequence(objectIdentifier('1.3.101.112')),
  'ecdsa-p256': sequence(objectIdentifier('1.2.840.10045.4.3.2')),
  'rsa-2048': sequence(objectIdentifier('1.2.840.113549.1.1.11'), tlv(0x05)),
};

/** PrintableString's characters (X.680): such a value is one, any other a UTF8String. */
const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** An AttributeTypeAndValue's string: PrintableString when it can be one, else UTF8String. */
const directoryString = (value: string): Buffer => tlv(PRINTABLE.test(value) ? 0x13 : 0x0c, Buffer.from(value, 'utf8'));

/**
 * A CSR for the cluster key: subject O... (when asked) then CN, one attribute per RDN, the values as given; no SANs,
 * no extensions, no attributes. Signed as {@link signBytes} signs (Ed25519; ECDSA P-256 and RSA PKCS#1 v1.5 with
 * SHA-256).
 *
 * @example
 * ```ts
 * const csr = await buildCsr(privateKey, { commonName: 'consumer-1' });
 * ```
 */
export async function buildCsr(privateKey: KeyObject, subject: CsrSubject): Promise<BuiltCsr> {
  const attributes = [
    ...(subject.organizations ?? []).map((value) => ({ oid: OID.organization, value })),
    { oid: OID.commonName, value: subject.commonName },
  ];
  const name = sequence(
    ...attributes.map(({ oid, value }) => set(sequence(objectIdentifier(oid), directoryString(value)))),
  );
  // CertificationRequestInfo: version 0, subject, the public key, no attributes ([0] IMPLICIT SET OF, empty).
  const info = sequence(tlv(0x02, Buffer.from([0])), name, spkiDer(privateKey), tlv(0xa0));
  const der = sequence(info, SIGNED_WITH[keyAlgorithm(privateKey)], bitString(signBytes(privateKey, info)));
  const body = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return { pem: `-----BEGIN CERTIFICATE REQUEST-----\n${body}-----END CERTIFICATE REQUEST-----`, der };
}

/** One attribute of the subject, in order: `type` is the OID, `value` the string value. */
export interface SubjectAttribute {
  type: string;
  value: string;
}

/** Plain data read from a CSR. */
export interface ParsedCsr {
  der: Buffer;
  /** The requested public key. */
  publicKey: KeyObject;
  subject: SubjectAttribute[];
  commonNames: string[];
  organizations: string[];
  /** The subject's other attribute types (OU, L, emailAddress...), by OID. */
  otherSubjectTypes: string[];
  /** Requested extensions (inside the extensionRequest attribute), by OID. */
  extensions: Array<{ type: string; critical: boolean; value: Buffer; raw: Buffer }>;
  /** Requested SANs as `type:value` (dns:x, ip:1.2.3.4, email:..., url:...). */
  subjectAltNames: string[];
  /** Attributes other than extensionRequest (challengePassword...), by OID. */
  otherAttributes: string[];
  /** The self-signature checks out against the requested key. */
  signatureValid: boolean;
}

const PEM_CSR = /-----BEGIN (?:NEW )?CERTIFICATE REQUEST-----([\s\S]+?)-----END (?:NEW )?CERTIFICATE REQUEST-----/;

/**
 * Reads a CSR from PEM text or DER bytes (DER decoded by ./der.ts: this is on the issuer's hot path). Malformed input
 * → ERR_TENANT_BAD_PEM; an unsupported key type → ERR_TENANT_UNSUPPORTED_KEY. An invalid self-signature is reported
 * in `signatureValid`, not thrown.
 */
export async function parseCsr(input: string | Uint8Array, path?: string): Promise<ParsedCsr> {
  return parseCsrSync(input, path);
}

export function parseCsrSync(input: string | Uint8Array, path?: string): ParsedCsr {
  const at = path === undefined ? {} : { path };
  const malformed = (cause?: unknown) =>
    tenantError('ERR_TENANT_BAD_PEM', 'the CSR is not a PKCS#10 certification request (PEM "CERTIFICATE REQUEST")', {
      ...at,
      ...(cause === undefined ? {} : { cause }),
    });
  let der: Buffer;
  if (typeof input === 'string' || Buffer.from(input.subarray(0, 40)).toString('latin1').includes('-----BEGIN')) {
    const text = typeof input === 'string' ? input : Buffer.from(input).toString('utf8');
    const body = PEM_CSR.exec(text)?.[1];
    if (body === undefined || !/^[A-Za-z0-9+/=\s]+$/.test(body)) {
      throw malformed();
    }
    der = Buffer.from(body.replace(/\s+/g, ''), 'base64');
  } else {
    der = Buffer.from(input);
  }

  let info: ReturnType<typeof readRequestInfo>;
  try {
    info = readRequestInfo(der);
  } catch (cause) {
    throw malformed(cause);
  }
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: info.spki, format: 'der', type: 'spki' });
  } catch (cause) {
    throw tenantError('ERR_TENANT_UNSUPPORTED_KEY', "the CSR's public key cannot be read", { ...at, cause });
  }
  keyAlgorithm(publicKey, path);
  const { subject, extensions, subjectAltNames, otherAttributes } = info;
  return {
    der,
    publicKey,
    subject,
    commonNames: subject.filter((a) => a.type === OID.commonName).map((a) => a.value),
    organizations: subject.filter((a) => a.type === OID.organization).map((a) => a.value),
    otherSubjectTypes: subject
      .filter((a) => a.type !== OID.commonName && a.type !== OID.organization)
      .map((a) => a.type),
    extensions,
    subjectAltNames,
    otherAttributes,
    signatureValid: verifySelfSignature(der, publicKey),
  };
}

function expectTag(element: DerElement | undefined, tag: number, what: string): DerElement {
  if (element === undefined || element.tag !== tag) {
    throw new RangeError(`expected ${what}`);
  }
  return element;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function decodeString(element: DerElement): string {
  switch (element.tag) {
    case 0x0c: // UTF8String: invalid UTF-8 is refused, never read as U+FFFD (two names would read the same)
      return STRICT_UTF8.decode(element.value);
    case 0x13: // PrintableString
    case 0x16: // IA5String
    case 0x14: // TeletexString
      return element.value.toString('latin1');
    case 0x1e: {
      // BMPString: UCS-2 big-endian
      const swapped = Buffer.from(element.value);
      swapped.swap16();
      return swapped.toString('utf16le');
    }
    default:
      throw new RangeError(`unsupported string type ${element.tag}`);
  }
}

function generalName(element: DerElement): string {
  switch (element.tag) {
    case 0x82:
      return `dns:${element.value.toString('latin1')}`;
    case 0x81:
      return `email:${element.value.toString('latin1')}`;
    case 0x86:
      return `url:${element.value.toString('latin1')}`;
    case 0x87:
      return element.value.length === 4
        ? `ip:${[...element.value].join('.')}`
        : `ip:${element.value.toString('hex').replace(/(.{4})(?!$)/g, '$1:')}`;
    default:
      return `other:[${element.tag & 0x1f}]`;
  }
}

/** CertificationRequestInfo: subject, SPKI, attributes (extensionRequest unpacked). */
function readRequestInfo(der: Buffer) {
  const outer = readElement(der);
  if (outer.tag !== 0x30 || outer.end !== der.length) {
    throw new RangeError('not a DER SEQUENCE');
  }
  const [infoElement] = children(outer.value);
  const [version, name, spki, attributes, ...rest] = children(
    expectTag(infoElement, 0x30, 'CertificationRequestInfo').value,
  );
  if (expectTag(version, 0x02, 'version').value.toString('hex') !== '00' || rest.length > 0) {
    throw new RangeError('unsupported CSR version');
  }
  const subject: SubjectAttribute[] = [];
  for (const rdn of children(expectTag(name, 0x30, 'subject Name').value)) {
    for (const pair of children(expectTag(rdn, 0x31, 'RDN').value)) {
      const [type, value] = children(expectTag(pair, 0x30, 'AttributeTypeAndValue').value);
      const text = decodeString(value ?? expectTag(undefined, 0, 'value'));
      // X.520's DirectoryString is SIZE (1..MAX): an empty value names nothing.
      if (text === '') throw new RangeError('empty subject attribute value');
      subject.push({ type: decodeObjectIdentifier(expectTag(type, 0x06, 'attribute type').value), value: text });
    }
  }
  const extensions: ParsedCsr['extensions'] = [];
  const subjectAltNames: string[] = [];
  const otherAttributes: string[] = [];
  for (const attribute of attributes === undefined ? [] : children(expectTag(attributes, 0xa0, 'attributes').value)) {
    const [type, values] = children(expectTag(attribute, 0x30, 'Attribute').value);
    const oid = decodeObjectIdentifier(expectTag(type, 0x06, 'attribute type').value);
    if (oid !== OID.extensionRequest) {
      otherAttributes.push(oid);
      continue;
    }
    for (const list of children(expectTag(values, 0x31, 'attribute values').value)) {
      for (const extension of children(expectTag(list, 0x30, 'Extensions').value)) {
        const parts = children(expectTag(extension, 0x30, 'Extension').value);
        const extensionOid = decodeObjectIdentifier(expectTag(parts[0], 0x06, 'extension id').value);
        const critical = parts.length === 3 && expectTag(parts[1], 0x01, 'critical').value[0] !== 0;
        const value = expectTag(parts[parts.length - 1], 0x04, 'extension value').value;
        extensions.push({ type: extensionOid, critical, value: Buffer.from(value), raw: Buffer.from(extension.raw) });
        if (extensionOid === OID.subjectAltName) {
          const [names] = children(value);
          for (const entry of children(expectTag(names, 0x30, 'GeneralNames').value)) {
            subjectAltNames.push(generalName(entry));
          }
        }
      }
    }
  }
  return {
    subject,
    spki: Buffer.from(expectTag(spki, 0x30, 'SubjectPublicKeyInfo').raw),
    extensions,
    subjectAltNames,
    otherAttributes,
  };
}

/** Signature algorithms a CSR may be signed with, by OID: the digest for node:crypto (null: Ed25519) and key type. */
const SIGNATURE_ALGORITHMS: Readonly<Record<string, { digest: string | null; keyType: string }>> = {
  '1.3.101.112': { digest: null, keyType: 'ed25519' },
  '1.2.840.10045.4.3.2': { digest: 'sha256', keyType: 'ec' },
  '1.2.840.10045.4.3.3': { digest: 'sha384', keyType: 'ec' },
  '1.2.840.10045.4.3.4': { digest: 'sha512', keyType: 'ec' },
  '1.2.840.113549.1.1.11': { digest: 'sha256', keyType: 'rsa' },
  '1.2.840.113549.1.1.12': { digest: 'sha384', keyType: 'rsa' },
  '1.2.840.113549.1.1.13': { digest: 'sha512', keyType: 'rsa' },
};

/**
 * Checks a CSR's self-signature with node:crypto: over the DER of CertificationRequestInfo, with the requested key,
 * by an algorithm of that key type (SHA-1 and unknown algorithms are refused). Never throws.
 */
export function verifySelfSignature(der: Buffer, publicKey: KeyObject): boolean {
  try {
    const parts = splitSigned(der);
    const algorithm = SIGNATURE_ALGORITHMS[parts.algorithm];
    if (
      algorithm === undefined ||
      algorithm.keyType !== publicKey.asymmetricKeyType ||
      parts.algorithmParameters !== undefined
    ) {
      return false;
    }
    const key = algorithm.keyType === 'ec' ? { key: publicKey, dsaEncoding: 'der' as const } : publicKey;
    return verify(algorithm.digest, parts.signed, key, parts.signature);
  } catch {
    return false;
  }
}

/** PEM text of a DER CSR. */
export function csrPem(der: Uint8Array): string {
  const body = Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${body}-----END CERTIFICATE REQUEST-----\n`;
}
