/**
 * PKCS#10 certification requests: build one with the cluster key (the private key never leaves the process), and
 * read one into plain data the issuer can judge: subject attributes, requested SANs and extensions, other
 * attributes, the public key, and whether the self-signature is valid.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { splitSigned } from './der.js';
import { tenantError } from './protocol.js';
import { keyAlgorithm, toCryptoKeyPair, webCryptoAlgorithm } from './keys.js';
import { x509 } from './x509.js';

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

/**
 * A CSR for the cluster key: subject CN (and O, when asked), nothing else — no SANs, no extensions, no attributes.
 *
 * @example
 * ```ts
 * const csr = await buildCsr(privateKey, { commonName: 'consumer-1' });
 * ```
 */
export async function buildCsr(privateKey: KeyObject, subject: CsrSubject): Promise<BuiltCsr> {
  const name: Array<Record<string, string[]>> = [];
  for (const organization of subject.organizations ?? []) {
    name.push({ O: [organization] });
  }
  name.push({ CN: [subject.commonName] });
  const request = await x509.Pkcs10CertificateRequestGenerator.create({
    name: new x509.Name(name),
    keys: toCryptoKeyPair(privateKey),
    signingAlgorithm: webCryptoAlgorithm(privateKey),
  });
  const der = Buffer.from(request.rawData);
  return { pem: request.toString('pem'), der };
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

const PEM_CSR = /-----BEGIN (NEW )?CERTIFICATE REQUEST-----[\s\S]+?-----END (NEW )?CERTIFICATE REQUEST-----/;

/**
 * Reads a CSR from PEM text or DER bytes. Malformed input → ERR_TENANT_BAD_PEM; an unsupported key type →
 * ERR_TENANT_UNSUPPORTED_KEY. An invalid self-signature is reported in `signatureValid`, not thrown.
 */
export async function parseCsr(input: string | Uint8Array, path?: string): Promise<ParsedCsr> {
  const at = path === undefined ? {} : { path };
  let request: InstanceType<typeof x509.Pkcs10CertificateRequest>;
  try {
    if (typeof input === 'string' || Buffer.from(input.subarray(0, 32)).toString('latin1').includes('-----BEGIN')) {
      const text = typeof input === 'string' ? input : Buffer.from(input).toString('utf8');
      const pem = PEM_CSR.exec(text)?.[0];
      if (pem === undefined) {
        throw new Error('no PEM "CERTIFICATE REQUEST" block');
      }
      request = new x509.Pkcs10CertificateRequest(pem.replace(/NEW CERTIFICATE REQUEST/g, 'CERTIFICATE REQUEST'));
    } else {
      request = new x509.Pkcs10CertificateRequest(Buffer.from(input));
    }
  } catch (cause) {
    throw tenantError('ERR_TENANT_BAD_PEM', 'the CSR is not a PKCS#10 certification request (PEM "CERTIFICATE REQUEST")', { ...at, cause });
  }
  const der = Buffer.from(request.rawData);
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: Buffer.from(request.publicKey.rawData), format: 'der', type: 'spki' });
  } catch (cause) {
    throw tenantError('ERR_TENANT_UNSUPPORTED_KEY', 'the CSR\'s public key cannot be read', { ...at, cause });
  }
  keyAlgorithm(publicKey, path);

  const subject: SubjectAttribute[] = [];
  for (const rdn of request.subjectName.toJSON()) {
    for (const [type, values] of Object.entries(rdn)) {
      for (const value of values) {
        subject.push({ type: attributeOid(type), value });
      }
    }
  }

  const extensions: ParsedCsr['extensions'] = [];
  const subjectAltNames: string[] = [];
  const otherAttributes: string[] = [];
  try {
    for (const attribute of request.attributes) {
      if (attribute.type !== OID.extensionRequest) {
        otherAttributes.push(attribute.type);
      }
    }
    for (const extension of request.extensions) {
      extensions.push({ type: extension.type, critical: extension.critical, value: Buffer.from(extension.value), raw: Buffer.from(extension.rawData) });
      if (extension.type === OID.subjectAltName) {
        const names = new x509.SubjectAlternativeNameExtension(extension.rawData);
        for (const name of names.names.toJSON()) {
          subjectAltNames.push(`${name.type}:${name.value}`);
        }
      }
    }
  } catch (cause) {
    throw tenantError('ERR_TENANT_BAD_PEM', 'the CSR\'s attributes or extensions cannot be read', { ...at, cause });
  }

  const signatureValid = verifySelfSignature(der, publicKey);

  return {
    der,
    publicKey,
    subject,
    commonNames: subject.filter((a) => a.type === OID.commonName).map((a) => a.value),
    organizations: subject.filter((a) => a.type === OID.organization).map((a) => a.value),
    otherSubjectTypes: subject.filter((a) => a.type !== OID.commonName && a.type !== OID.organization).map((a) => a.type),
    extensions,
    subjectAltNames,
    otherAttributes,
    signatureValid,
  };
}

const SHORT_NAMES: Readonly<Record<string, string>> = {
  CN: OID.commonName,
  O: OID.organization,
  OU: '2.5.4.11',
  C: '2.5.4.6',
  L: '2.5.4.7',
  ST: '2.5.4.8',
  DC: '0.9.2342.19200300.100.1.25',
  E: '1.2.840.113549.1.9.1',
  G: '2.5.4.42',
  I: '2.5.4.43',
  SN: '2.5.4.4',
  T: '2.5.4.12',
};

function attributeOid(type: string): string {
  return SHORT_NAMES[type] ?? type;
}

/** PEM text of a DER CSR. */
export function csrPem(der: Uint8Array): string {
  return new x509.Pkcs10CertificateRequest(Buffer.from(der)).toString('pem');
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
    if (algorithm === undefined || algorithm.keyType !== publicKey.asymmetricKeyType || parts.algorithmParameters !== undefined) {
      return false;
    }
    const key = algorithm.keyType === 'ec' ? { key: publicKey, dsaEncoding: 'der' as const } : publicKey;
    return verify(algorithm.digest, parts.signed, key, parts.signature);
  } catch {
    return false;
  }
}
