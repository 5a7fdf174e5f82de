/**
 * The one reader of key and certificate files: every private key or certificate the CLI, the issuer and the plugins
 * take from a file (`--key-file`, `--tls-cert-file`, `--tls-key-file`, `--api-server-ca`, `--private-key-file`, the
 * issuer data directory's CA files) is decoded here, so that any decoder failure becomes a coded
 * {@link CredentialsError} naming the file, the flag that named it and what was expected — never OpenSSL's
 * `error:1E08010C:DECODER routines::unsupported` alone. The caller gives the code its command documents.
 *
 * What was found is described from the PEM labels (`a PEM "CERTIFICATE" block`, `no PEM block`, `an empty file`):
 * nothing of the file's body is ever quoted (a key file's text is a secret), and of OpenSSL's error only its code.
 */
import { CredentialsError, type ErrorCode } from './errors.js';
import type { KeyObject, X509Certificate } from 'node:crypto';

/** Where PEM text came from, and how to refuse it. */
export interface PemSource {
  /** The file (as the user gave it or resolved). */
  file: string;
  /** The flag that named the file, when one did (`--tls-key-file`). */
  flag?: string;
  /** The registered code of the refusal: the one the command already documents for a bad file. */
  code: ErrorCode;
  /** A fix to suggest. */
  hint?: string;
}

/** What a private key file must hold. */
export const PRIVATE_KEY_EXPECTED =
  'a PEM private key (PKCS#8 "PRIVATE KEY", PKCS#1 "RSA PRIVATE KEY" or SEC1 "EC PRIVATE KEY"), unencrypted';
/** What a certificate file must hold. */
export const CERTIFICATE_EXPECTED = 'one or more PEM certificates ("CERTIFICATE")';

const BLOCK = /-----BEGIN ([A-Z0-9 ]{1,40})-----[\s\S]*?-----END \1-----/g;
const PRIVATE_KEY_LABELS = new Set(['PRIVATE KEY', 'RSA PRIVATE KEY', 'EC PRIVATE KEY']);

/** The labels of the PEM blocks in `text`, in order. */
export function pemLabels(text: string): string[] {
  return [...text.matchAll(BLOCK)].map((match) => match[1]!);
}

/** What `text` holds, in words that quote none of it (`a PEM block "CERTIFICATE"`, `an empty file`). */
export function describePem(text: string): string {
  if (text.trim() === '') return 'an empty file';
  const labels = pemLabels(text);
  if (labels.length === 0) return 'no PEM block';
  const unique = [...new Set(labels)];
  return `${labels.length === 1 ? 'a PEM block' : `${labels.length} PEM blocks`} ${unique.map((label) => `"${label}"`).join(', ')}`;
}

function refusal(source: PemSource, expected: string, found: string, cause?: unknown): CredentialsError {
  const code = (cause as { code?: unknown } | undefined)?.code;
  const named = source.flag === undefined ? source.file : `${source.flag} ${source.file}`;
  return new CredentialsError(
    source.code,
    `${named}: expected ${expected}, found ${found}${typeof code === 'string' ? ` (${code})` : ''}`,
    { path: source.flag ?? source.file, ...(source.hint === undefined ? {} : { hint: source.hint }) },
  );
}

/**
 * The private key of a PEM file's text: exactly one private key block (PKCS#8, PKCS#1 or SEC1), which OpenSSL
 * decodes. Anything else — another block (a certificate, a public key, an encrypted key), garbage, an empty file, a
 * block that does not decode — is `source.code`.
 */
export function decodePrivateKeyPem(text: string, source: PemSource): KeyObject {
  const labels = pemLabels(text);
  const keys = labels.filter((label) => PRIVATE_KEY_LABELS.has(label));
  if (keys.length !== 1) {
    const encrypted = labels.includes('ENCRYPTED PRIVATE KEY');
    throw refusal(
      source,
      PRIVATE_KEY_EXPECTED,
      encrypted ? 'an encrypted private key (decrypt it: openssl pkey -in FILE -out NEW)' : describePem(text),
    );
  }
  const { createPrivateKey } = process.getBuiltinModule('node:crypto');
  try {
    return createPrivateKey({ key: text, format: 'pem' });
  } catch (cause) {
    throw refusal(source, PRIVATE_KEY_EXPECTED, `a "${keys[0]}" block that does not decode as one`, cause);
  }
}

/**
 * The certificates of a PEM file's text, in order (a chain: leaf first): at least one, each of which decodes.
 * Blocks with other labels are not certificates and are refused (a key where a certificate is expected).
 */
export function decodeCertificatesPem(text: string, source: PemSource): X509Certificate[] {
  const labels = pemLabels(text);
  if (labels.length === 0 || labels.some((label) => label !== 'CERTIFICATE')) {
    throw refusal(source, CERTIFICATE_EXPECTED, describePem(text));
  }
  const { X509Certificate } = process.getBuiltinModule('node:crypto');
  return [...text.matchAll(BLOCK)].map((match, index) => {
    try {
      return new X509Certificate(match[0]);
    } catch (cause) {
      throw refusal(
        source,
        CERTIFICATE_EXPECTED,
        `certificate ${index + 1} of ${labels.length}, which does not decode as one`,
        cause,
      );
    }
  });
}
