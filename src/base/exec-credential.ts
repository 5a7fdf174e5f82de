/**
 * The two ends of the exec credential protocol: KUBERNETES_EXEC_INFO in, one ExecCredential document out.
 *
 * @see https://kubernetes.io/docs/reference/access-authn-authz/authentication/#input-and-output-formats
 */
import { CredentialsError, jsonSyntaxProblem, type ErrorCodes } from './errors.js';
import type { Env } from './io.js';
import { isRecord } from './record.js';

/** The exec credential API versions a client may speak, newest first. */
export const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const;

/** The exec credential API version a plugin is run with and answers in. */
export type ExecApiVersion = 'client.authentication.k8s.io/v1' | 'client.authentication.k8s.io/v1beta1';
/** Whether an exec plugin may use the terminal: its exec config's `interactiveMode`. */
export type InteractiveMode = 'Never' | 'IfAvailable' | 'Always';

/** kubeconfig's `users[].user.exec` (ExecConfig). */
export interface ExecConfig {
  apiVersion: ExecApiVersion;
  command: string;
  args?: string[];
  env?: { name: string; value: string }[];
  installHint?: string;
  provideClusterInfo?: boolean;
  interactiveMode?: InteractiveMode;
}

/**
 * The cluster as an exec plugin sees it: exactly the shape of KUBERNETES_EXEC_INFO `spec.cluster`
 * (client.authentication.k8s.io v1 / v1beta1 `Cluster`). `config` is the raw object of the cluster extension named
 * `client.authentication.k8s.io/exec`.
 */
export interface ExecCluster {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  /** Base64 of the PEM CA bundle (as in kubeconfig and the ClusterProfile). */
  'certificate-authority-data'?: string;
  'proxy-url'?: string;
  'disable-compression'?: boolean;
  config?: unknown;
}

/** The credential an exec plugin returns (ExecCredential `status`). PEM strings are raw PEM, not base64. */
export interface ExecCredentialStatus {
  /** RFC 3339. */
  expirationTimestamp?: string;
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
}

/** KUBERNETES_EXEC_INFO after validation (v1 and v1beta1 have the same shape). */
export interface ExecCredentialInput {
  apiVersion: ExecApiVersion;
  kind: 'ExecCredential';
  spec: {
    /** Whether the plugin may prompt (stdin was handed over). Never prompt when false. */
    interactive?: boolean;
    /** Present when the kubeconfig sets `provideClusterInfo: true`; `config` is the provider's per-cluster settings. */
    cluster?: ExecCluster;
  };
}

/** Codes of a bad KUBERNETES_EXEC_INFO (exit 2) and of a provider returning an unusable credential (exit 1). */
export type ExecCredentialErrorCode = ErrorCodes<'ERR_PLUGIN_EXEC_INFO' | 'ERR_PLUGIN_BAD_CREDENTIAL'>;

// As in the schema: base64 with the line breaks Go and the API server accept.
const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/;
const API_VERSIONS: readonly string[] = EXEC_API_VERSIONS;

/**
 * Reads and validates KUBERNETES_EXEC_INFO. Without the variable (very old clients) the answer is v1beta1 and the
 * plugin counts as interactive only when `stdinIsTTY()` (a person ran it by hand).
 *
 * @example
 * ```ts
 * readExecInfo({ KUBERNETES_EXEC_INFO: '{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{"interactive":false}}' }, () => false);
 * ```
 */
export function readExecInfo(env: Env, stdinIsTTY: () => boolean): ExecCredentialInput {
  const raw = env['KUBERNETES_EXEC_INFO'];
  if (raw === undefined || raw.trim() === '') {
    return {
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      spec: { interactive: stdinIsTTY() },
    };
  }
  let document: unknown;
  try {
    document = JSON.parse(raw);
  } catch (error) {
    // No cause: V8's SyntaxError quotes the variable, and spec.cluster.config may hold anything.
    throw new CredentialsError(
      'ERR_PLUGIN_EXEC_INFO',
      `KUBERNETES_EXEC_INFO is not JSON: ${jsonSyntaxProblem(error)}`,
      {
        path: 'KUBERNETES_EXEC_INFO',
      },
    );
  }
  const apiVersion = isRecord(document) ? document['apiVersion'] : undefined;
  if (typeof apiVersion !== 'string' || !API_VERSIONS.includes(apiVersion)) {
    throw new CredentialsError(
      'ERR_PLUGIN_EXEC_INFO',
      `KUBERNETES_EXEC_INFO has apiVersion ${JSON.stringify(apiVersion)}; this plugin speaks ${API_VERSIONS.join(' and ')}`,
      {
        path: 'KUBERNETES_EXEC_INFO $.apiVersion',
        hint: 'set users[].user.exec.apiVersion in the kubeconfig to client.authentication.k8s.io/v1',
      },
    );
  }
  return validateInput(document, apiVersion as ExecApiVersion);
}

// The shape is checked here by hand: this runs on every invocation and must stay cheap. It follows
// schemas/execcredential-input.<version>.schema.json (a unit test checks both agree on the same documents).
function validateInput(document: unknown, apiVersion: ExecApiVersion): ExecCredentialInput {
  const fail = (path: string, message: string): never => {
    throw new CredentialsError('ERR_PLUGIN_EXEC_INFO', `KUBERNETES_EXEC_INFO: ${message}`, {
      path: `KUBERNETES_EXEC_INFO ${path}`,
    });
  };
  if (!isRecord(document)) {
    return fail('$', 'must be an object');
  }
  if (document['kind'] !== 'ExecCredential') {
    fail('$.kind', `kind must be "ExecCredential", not ${JSON.stringify(document['kind'])}`);
  }
  const spec = document['spec'] ?? {};
  if (!isRecord(spec)) {
    return fail('$.spec', 'spec must be an object');
  }
  if (spec['interactive'] !== undefined && typeof spec['interactive'] !== 'boolean') {
    fail('$.spec.interactive', 'spec.interactive must be a boolean');
  }
  const cluster = spec['cluster'];
  if (cluster !== undefined && cluster !== null) {
    if (!isRecord(cluster)) {
      return fail('$.spec.cluster', 'spec.cluster must be an object');
    }
    if (typeof cluster['server'] !== 'string' || cluster['server'] === '') {
      fail('$.spec.cluster.server', 'spec.cluster.server must be a non-empty string');
    }
    for (const name of ['tls-server-name', 'certificate-authority-data', 'proxy-url'] as const) {
      if (cluster[name] !== undefined && typeof cluster[name] !== 'string') {
        fail(`$.spec.cluster['${name}']`, `spec.cluster.${name} must be a string`);
      }
    }
    if (
      typeof cluster['certificate-authority-data'] === 'string' &&
      !BASE64.test(cluster['certificate-authority-data'])
    ) {
      fail(
        "$.spec.cluster['certificate-authority-data']",
        'spec.cluster.certificate-authority-data must be base64 (of the PEM CA bundle)',
      );
    }
    for (const name of ['insecure-skip-tls-verify', 'disable-compression'] as const) {
      if (cluster[name] !== undefined && typeof cluster[name] !== 'boolean') {
        fail(`$.spec.cluster['${name}']`, `spec.cluster.${name} must be a boolean`);
      }
    }
  }
  return {
    apiVersion,
    kind: 'ExecCredential',
    spec: {
      ...(typeof spec['interactive'] === 'boolean' ? { interactive: spec['interactive'] } : {}),
      ...(isRecord(cluster)
        ? { cluster: cluster as unknown as NonNullable<ExecCredentialInput['spec']['cluster']> }
        : {}),
    },
  };
}

/**
 * Checks a status the way client-go will (a token or a certificate + key pair, never one of the pair alone, an RFC
 * 3339 expiry) and renders the one document for stdout, in the input's apiVersion.
 */
export function renderExecCredential(apiVersion: ExecApiVersion, status: ExecCredentialStatus): string {
  assertUsableStatus(status);
  const clean: ExecCredentialStatus = {};
  if (status.expirationTimestamp !== undefined) clean.expirationTimestamp = status.expirationTimestamp;
  if (status.token !== undefined) clean.token = status.token;
  if (status.clientCertificateData !== undefined) clean.clientCertificateData = status.clientCertificateData;
  if (status.clientKeyData !== undefined) clean.clientKeyData = status.clientKeyData;
  return `${JSON.stringify({ apiVersion, kind: 'ExecCredential', status: clean })}\n`;
}

/** Throws `ERR_PLUGIN_BAD_CREDENTIAL` for a status client-go would reject. */
export function assertUsableStatus(status: ExecCredentialStatus): void {
  const bad = (message: string, path: string): never => {
    throw new CredentialsError('ERR_PLUGIN_BAD_CREDENTIAL', message, { path });
  };
  if (!isRecord(status)) {
    bad('the provider returned no status', '$.status');
  }
  const { token, clientCertificateData: cert, clientKeyData: key, expirationTimestamp } = status;
  for (const [name, value] of Object.entries({
    token,
    clientCertificateData: cert,
    clientKeyData: key,
    expirationTimestamp,
  })) {
    if (value !== undefined && (typeof value !== 'string' || value === '')) {
      bad(`status.${name} must be a non-empty string`, `$.status.${name}`);
    }
  }
  if ((cert === undefined) !== (key === undefined)) {
    bad(
      'the provider returned only a certificate or a key, not both',
      cert === undefined ? '$.status.clientCertificateData' : '$.status.clientKeyData',
    );
  }
  if (token === undefined && cert === undefined) {
    bad('the provider returned neither a token nor a certificate and key', '$.status');
  }
  if (expirationTimestamp !== undefined && parseTimestamp(expirationTimestamp) === undefined) {
    bad(
      `status.expirationTimestamp ${JSON.stringify(expirationTimestamp)} is not an RFC 3339 time`,
      '$.status.expirationTimestamp',
    );
  }
}

// What Go's time.Parse(time.RFC3339, ...) accepts, i.e. what client-go's metav1.Time reads from expirationTimestamp
// (checked against client-go by test/e2e/differential.test.ts): a 4-digit year, 2-digit month, day, minute and second,
// a 1- or 2-digit hour, an optional fraction after '.' or ',', then 'Z' or ±hh:mm. Uppercase T and Z only.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Milliseconds since the epoch of an RFC 3339 time as Go parses it, or undefined. Ranges are checked as Go does:
 * month 1–12, a day that exists in that month (Feb 29 only in leap years), hour < 24, minute and second < 60 (no leap
 * second); an offset's hours may be up to 24 and its minutes up to 60 (Go's tolerance). Fractions below a
 * millisecond are truncated, like Go's UnixMilli.
 */
export function parseTimestamp(value: string): number | undefined {
  const match = RFC3339.exec(value);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  if (monthDays === undefined || day < 1 || day > monthDays || hour > 23 || minute > 59 || second > 59)
    return undefined;
  let offsetMinutes = 0;
  if (match[8] !== undefined) {
    const offsetHours = Number(match[9]);
    const offsetRest = Number(match[10]);
    if (offsetHours > 24 || offsetRest > 60) return undefined;
    offsetMinutes = (match[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetRest);
  }
  // setUTCFullYear, not Date.UTC: Date.UTC maps years 0–99 to 1900–1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  const fraction = match[7] === undefined ? 0 : Number(match[7].slice(0, 3).padEnd(3, '0'));
  return date.getTime() + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + fraction;
}

/**
 * `ms` since the epoch as RFC 3339 in UTC — `2026-01-02T03:04:05.678Z`, or `2026-01-02T03:04:05Z` when `seconds` —,
 * what `Date#toISOString` gives for the years 0–9999 (others: its extended form). Not toISOString itself: V8's first
 * Date-to-string conversion of a process sets up its time-zone cache from ICU's data, which a plugin's miss would
 * pay for in peak RSS; the UTC getters do not.
 */
export function formatTimestamp(ms: number, options: { seconds?: boolean } = {}): string {
  const date = new Date(ms);
  const year = date.getUTCFullYear();
  if (Number.isNaN(year)) throw new RangeError('Invalid time value');
  if (year < 0 || year > 9999)
    return options.seconds === true ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : date.toISOString();
  const two = (n: number): string => (n < 10 ? `0${n}` : String(n));
  const text = `${String(year).padStart(4, '0')}-${two(date.getUTCMonth() + 1)}-${two(date.getUTCDate())}T${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())}`;
  return options.seconds === true ? `${text}Z` : `${text}.${String(date.getUTCMilliseconds()).padStart(3, '0')}Z`;
}
