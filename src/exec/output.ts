/**
 * Step 3 of an exec: what the plugin printed → a credential, with client-go's rules and error texts
 * (k8s.io/client-go/plugin/pkg/client/auth/exec). Pure: no process, no clock.
 *
 * @see https://kubernetes.io/docs/reference/access-authn-authz/authentication/#input-and-output-formats
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { parseAllDocuments, type Tags } from 'yaml';
import { MAX_ALIAS_COUNT } from '../base/document.js';
import { jsonSyntaxProblem } from '../base/errors.js';
import { parseTimestamp } from '../base/exec-credential.js';
import type { ExecApiVersion, ExecCredentialStatus } from '../base/exec-credential.js';
import { isGoBase64 } from '../base/go-base64.js';
import { execError } from './errors.js';
import { isRecord } from '../base/record.js';

/** A credential the plugin returned, checked and ready to use. */
export interface ExecCredential {
  /** The `status` as the plugin printed it. */
  readonly status: Readonly<ExecCredentialStatus>;
  readonly token: string | undefined;
  /** PEM; both or neither. */
  readonly clientCertificate: string | undefined;
  readonly clientKey: string | undefined;
  /** `expirationTimestamp` in epoch ms; undefined = never expires (client-go keeps it until a 401). */
  readonly expiresAt: number | undefined;
  /** SHA-256 fingerprint of the client certificate (hex, no colons), to key TLS connections by identity. */
  readonly certificateFingerprint: string | undefined;
}

/** What a value is, without saying what it holds (plugin output may be a secret). */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function decodeError(detail: string, cause?: unknown) {
  return execError('ERR_EXEC_OUTPUT_INVALID', `decoding stdout: ${detail}`, { cause });
}

// Go's unicode.IsSpace: what client-go skips before it looks for the '{' that makes the output JSON.
const LEADING_GO_SPACE = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*/;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/**
 * Whether client-go's YAML reader (go.yaml.in/yaml/v2 `resolve`) reads a plain scalar as a number: after '.', a
 * float; after a digit or a sign, with '_' removed, an integer Go's strconv.ParseInt/ParseUint (base prefixes 0x, 0o,
 * 0b, legacy 0 octal) take in 64 bits, else a YAML-style float that does not overflow.
 */
function isGoYamlNumber(text: string): boolean {
  if (text.startsWith('.')) return /^\.[0-9]+(?:[eE][-+]?[0-9]+)?$/.test(text) && Number.isFinite(Number(text));
  if (!/^[-+0-9]/.test(text)) return false;
  const plain = text.replaceAll('_', '');
  const int = /^([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$/.exec(plain);
  if (int !== null) {
    const digits = int[2] ?? '';
    const magnitude = BigInt(/^0[0-7]+$/.test(digits) ? `0o${digits.slice(1)}` : digits);
    const value = int[1] === '-' ? -magnitude : magnitude;
    if ((value >= INT64_MIN && value <= INT64_MAX) || (int[1] === '' && value <= UINT64_MAX)) return true;
  }
  return /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/.test(plain) && Number.isFinite(Number(plain));
}

function goYamlNumber(text: string): number {
  if (/^[-+]?\.(?:inf|Inf|INF)$/.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^\.(?:nan|NaN|NAN)$/.test(text)) return Number.NaN;
  return Number(text.replaceAll('_', ''));
}

/** A RegExp whose test is a function: what the yaml package calls to pick a scalar's tag. */
function tester(test: (text: string) => boolean): RegExp {
  return Object.assign(/(?:)/, { test });
}

/**
 * YAML 1.1 scalars as client-go's YAML reader resolves them: y/yes/on/true... are booleans, ~/null are null, numbers
 * as {@link isGoYamlNumber} says; a plain timestamp stays text and there are no base-60 numbers. Only "string or
 * not" matters here: every field read is a string or a boolean.
 */
function yaml11Tags(tags: Tags): Tags {
  const kept = tags.filter((tag) =>
    typeof tag === 'string'
      ? ![
          'int',
          'intBin',
          'intHex',
          'intOct',
          'intTime',
          'float',
          'floatExp',
          'floatNaN',
          'floatTime',
          'timestamp',
        ].includes(tag)
      : !['tag:yaml.org,2002:int', 'tag:yaml.org,2002:float', 'tag:yaml.org,2002:timestamp'].includes(tag.tag),
  );
  return [
    ...kept,
    {
      tag: 'tag:yaml.org,2002:int',
      default: true,
      identify: (v) => typeof v === 'number',
      test: tester(isGoYamlNumber),
      resolve: goYamlNumber,
    },
    {
      tag: 'tag:yaml.org,2002:float',
      default: true,
      identify: () => false,
      test: /^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/,
      resolve: goYamlNumber,
    },
  ];
}

/**
 * The document client-go decodes: output whose first non-space character is '{' is JSON and nothing else (a YAML
 * flow mapping there is an error); anything else is YAML, of which only the first document of a stream counts.
 */
function parseDocument(stdout: string): unknown {
  if (stdout.trim() === '') {
    throw decodeError('the plugin printed nothing');
  }
  if (stdout.replace(LEADING_GO_SPACE, '').startsWith('{')) {
    try {
      return JSON.parse(stdout);
    } catch (error) {
      // No cause: V8's SyntaxError quotes the output, which may hold a credential.
      throw decodeError(`output starts with '{' but is not JSON: ${jsonSyntaxProblem(error)}`);
    }
  }
  const [first] = parseAllDocuments(stdout, {
    version: '1.1',
    customTags: yaml11Tags,
    uniqueKeys: false,
    prettyErrors: false,
  });
  if (first === undefined) {
    throw decodeError('the plugin printed nothing');
  }
  const problem = first.errors[0];
  if (problem !== undefined) {
    throw decodeError(`${problem.message.split('\n')[0] ?? 'not JSON or YAML'}`);
  }
  try {
    return first.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch {
    // The yaml package's message for an alias bomb; the same bound as every other document this package reads.
    throw decodeError(`its aliases expand to more than ${MAX_ALIAS_COUNT} nodes (an alias bomb?)`);
  }
}

// client-go decodes `spec` too (into the ExecCredential's Cluster): a value of the wrong type fails the decode.
const SPEC_CLUSTER_STRINGS = ['server', 'tls-server-name', 'certificate-authority-data', 'proxy-url'];
const SPEC_CLUSTER_BOOLEANS = ['insecure-skip-tls-verify', 'disable-compression'];

function checkSpec(spec: unknown): void {
  if (spec === undefined || spec === null) return;
  if (!isRecord(spec)) throw decodeError(`spec must be an object, got ${kindOf(spec)}`);
  if (spec.interactive !== undefined && spec.interactive !== null && typeof spec.interactive !== 'boolean') {
    throw decodeError(`spec.interactive must be a boolean, got ${kindOf(spec.interactive)}`);
  }
  const cluster = spec.cluster;
  if (cluster === undefined || cluster === null) return;
  if (!isRecord(cluster)) throw decodeError(`spec.cluster must be an object, got ${kindOf(cluster)}`);
  for (const key of SPEC_CLUSTER_STRINGS) {
    const value = cluster[key];
    if (value !== undefined && value !== null && typeof value !== 'string') {
      throw decodeError(`spec.cluster.${key} must be a string, got ${kindOf(value)}`);
    }
  }
  for (const key of SPEC_CLUSTER_BOOLEANS) {
    const value = cluster[key];
    if (value !== undefined && value !== null && typeof value !== 'boolean') {
      throw decodeError(`spec.cluster.${key} must be a boolean, got ${kindOf(value)}`);
    }
  }
  const ca = cluster['certificate-authority-data'];
  if (typeof ca === 'string' && !isGoBase64(ca)) {
    throw decodeError('spec.cluster.certificate-authority-data must be base64');
  }
}

function optionalString(status: Record<string, unknown>, key: keyof ExecCredentialStatus): string | undefined {
  const value = status[key];
  if (value === undefined || value === null) {
    return undefined;
  }
  if (typeof value !== 'string') {
    throw decodeError(`status.${key} must be a string, got ${Array.isArray(value) ? 'array' : typeof value}`);
  }
  return value;
}

/**
 * Parses and validates a plugin's stdout (JSON or YAML, one ExecCredential document) against the configured
 * apiVersion. Errors (all `ERR_EXEC_OUTPUT_INVALID` unless noted), with client-go's texts:
 * - `decoding stdout: ...` — not JSON/YAML, not an object, no `kind: ExecCredential` / apiVersion, wrong field types;
 * - `exec plugin is configured to use API version X, plugin returned version Y` (`ERR_EXEC_API_VERSION_MISMATCH`);
 * - `exec plugin didn't return a status field`;
 * - `exec plugin didn't return a token or cert/key pair`;
 * - `exec plugin returned only certificate or key, not both`;
 * - `failed parsing client key/certificate: ...` (PEM parsed with node:crypto; the key must match the certificate).
 *
 * @example
 *   const credential = parseExecCredential(stdout, 'client.authentication.k8s.io/v1');
 *   credential.token; // "abc"
 */
export function parseExecCredential(stdout: string, apiVersion: ExecApiVersion): ExecCredential {
  const doc = parseDocument(stdout);
  if (!isRecord(doc)) {
    // The type only, never the value: a plugin that prints a bare access token lands here.
    throw decodeError(`expected an ExecCredential object, got ${kindOf(doc)}`);
  }
  if (typeof doc.apiVersion !== 'string' || doc.apiVersion === '') {
    throw decodeError("Object 'apiVersion' is missing");
  }
  // client-go takes the kind from the type it decodes into when the output leaves it out (missing, empty or null).
  if (doc.kind !== undefined && doc.kind !== null && doc.kind !== '' && doc.kind !== 'ExecCredential') {
    throw decodeError(
      `unexpected kind ${typeof doc.kind === 'string' && /^[A-Za-z][A-Za-z0-9]{0,62}$/.test(doc.kind) ? JSON.stringify(doc.kind) : kindOf(doc.kind)}, expected "ExecCredential"`,
    );
  }
  if (doc.apiVersion !== apiVersion) {
    throw execError(
      'ERR_EXEC_API_VERSION_MISMATCH',
      `exec plugin is configured to use API version ${apiVersion}, plugin returned version ${doc.apiVersion}`,
    );
  }
  checkSpec(doc.spec);
  const status = doc.status;
  if (status === undefined || status === null) {
    throw execError('ERR_EXEC_OUTPUT_INVALID', "exec plugin didn't return a status field");
  }
  if (!isRecord(status)) {
    throw decodeError('status must be an object');
  }
  const token = optionalString(status, 'token');
  const clientCertificate = optionalString(status, 'clientCertificateData');
  const clientKey = optionalString(status, 'clientKeyData');
  const expirationTimestamp = optionalString(status, 'expirationTimestamp');
  let expiresAt: number | undefined;
  if (expirationTimestamp !== undefined) {
    expiresAt = parseTimestamp(expirationTimestamp);
    if (expiresAt === undefined) {
      throw decodeError(`status.expirationTimestamp ${JSON.stringify(expirationTimestamp)} is not an RFC 3339 time`);
    }
  }
  const hasCert = clientCertificate !== undefined && clientCertificate !== '';
  const hasKey = clientKey !== undefined && clientKey !== '';
  if ((token === undefined || token === '') && !hasCert && !hasKey) {
    throw execError('ERR_EXEC_OUTPUT_INVALID', "exec plugin didn't return a token or cert/key pair");
  }
  if (hasCert !== hasKey) {
    throw execError('ERR_EXEC_OUTPUT_INVALID', 'exec plugin returned only certificate or key, not both');
  }
  let certificateFingerprint: string | undefined;
  if (hasCert && hasKey) {
    try {
      const certificate = new X509Certificate(clientCertificate);
      const key = createPrivateKey(clientKey);
      if (!certificate.checkPrivateKey(key)) {
        throw new Error('tls: private key does not match public key');
      }
      certificateFingerprint = certificate.fingerprint256.replaceAll(':', '').toLowerCase();
    } catch (error) {
      throw execError('ERR_EXEC_OUTPUT_INVALID', `failed parsing client key/certificate: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  const copy: ExecCredentialStatus = {};
  if (expirationTimestamp !== undefined) copy.expirationTimestamp = expirationTimestamp;
  if (token !== undefined) copy.token = token;
  if (clientCertificate !== undefined) copy.clientCertificateData = clientCertificate;
  if (clientKey !== undefined) copy.clientKeyData = clientKey;
  return {
    status: Object.freeze(copy),
    token: token === '' ? undefined : token,
    clientCertificate: hasCert ? clientCertificate : undefined,
    clientKey: hasKey ? clientKey : undefined,
    expiresAt,
    certificateFingerprint,
  };
}
