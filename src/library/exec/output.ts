/**
 * Step 3 of an exec: what the plugin printed → a credential, with client-go's rules and error texts
 * (k8s.io/client-go/plugin/pkg/client/auth/exec). Pure: no process, no clock.
 *
 * @see https://kubernetes.io/docs/reference/access-authn-authz/authentication/#input-and-output-formats
 */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { YAML_OPTIONS } from '../../core/document.js';
import type { ExecApiVersion, ExecCredentialStatus } from '../types.js';
import { execError } from './errors.js';

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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What a value is, without saying what it holds (plugin output may be a secret). */
function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  return Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function decodeError(detail: string, cause?: unknown) {
  return execError('ERR_EXEC_OUTPUT_INVALID', `decoding stdout: ${detail}`, { cause });
}

function parseDocument(stdout: string): unknown {
  const text = stdout.trim();
  if (text === '') {
    throw decodeError('the plugin printed nothing');
  }
  if (text.startsWith('{')) {
    try {
      return JSON.parse(text);
    } catch {
      // Not JSON after all: YAML is a superset, let it decide and report.
    }
  }
  try {
    return parseYaml(text, YAML_OPTIONS);
  } catch (error) {
    throw decodeError(`${(error as Error).message.split('\n')[0] ?? 'not JSON or YAML'}`, error);
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
  if (doc.kind !== 'ExecCredential') {
    throw decodeError(
      doc.kind === undefined
        ? "Object 'Kind' is missing"
        : `unexpected kind ${typeof doc.kind === 'string' && /^[A-Za-z][A-Za-z0-9]{0,62}$/.test(doc.kind) ? JSON.stringify(doc.kind) : kindOf(doc.kind)}, expected "ExecCredential"`,
    );
  }
  if (doc.apiVersion !== apiVersion) {
    throw execError(
      'ERR_EXEC_API_VERSION_MISMATCH',
      `exec plugin is configured to use API version ${apiVersion}, plugin returned version ${doc.apiVersion}`,
    );
  }
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
    expiresAt = Date.parse(expirationTimestamp);
    if (!/^\d{4}-\d\d-\d\dT/.test(expirationTimestamp) || Number.isNaN(expiresAt)) {
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
