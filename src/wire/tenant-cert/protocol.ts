/**
 * The tenant-cert issuer's HTTPS API: paths, the documents that cross it, its errors (base/error-registry.ts), and the
 * build-request / process-response pairs a client uses (conventions: build, send, process — the network is a thin seam in between).
 *
 * The handshake (one client certificate):
 * ```text
 * POST /v1/nonces   NonceRequest (signed by the consumer's key)       -> 201 NonceResponse
 * POST /v1/tenants  Tenant (credentials.clusterprofile.io/v1alpha1)  -> 201 Identity
 * GET  /healthz                                                      -> 200 {"status":"ok"}
 * any failure                                                        -> 4xx/5xx ErrorResponse {"code","message"}
 * ```
 * Documents are JSON (`content-type: application/json`, at most {@link MAX_BODY_BYTES}); every `[]byte` field is
 * standard base64, as in Liqo's `authentication.liqo.io/v1beta1` documents, which the issuer accepts as input.
 *
 * @see docs/reference/issuer-api.md
 */
import { CredentialsError, type ErrorCode } from '../../base/errors.js';

export const API_PATHS = {
  nonces: '/v1/nonces',
  tenants: '/v1/tenants',
  healthz: '/healthz',
} as const;

/** Our document group; Liqo's is {@link LIQO_API_VERSION}. */
export const API_VERSION = 'credentials.clusterprofile.io/v1alpha1';
export const LIQO_API_VERSION = 'authentication.liqo.io/v1beta1';
/** Largest request body the issuer reads. */
export const MAX_BODY_BYTES = 64 * 1024;
// The cluster-ID rule is part of this wire format; it lives in its own small module because the plugin's cache-hit
// path checks --cluster-id and must not load the rest of this file.
export {
  CLUSTER_ID_MAX_LENGTH,
  CLUSTER_ID_PATTERN,
  CLUSTER_ID_RULE,
  checkClusterId,
  isClusterId,
} from './cluster-id.js';

export function tenantError(
  code: ErrorCode,
  message: string,
  options: { path?: string; hint?: string; cause?: unknown } = {},
): CredentialsError {
  return new CredentialsError(code, message, options);
}

// ---------------------------------------------------------------------------------------------------------------
// Documents (schemas/tenant-cert-*.schema.json are the source of truth; these types follow them)

/** How far a nonce request's timestamp may be from the issuer's clock (either way). */
export const NONCE_REQUEST_MAX_SKEW_MS = 5 * 60_000;

/**
 * POST /v1/nonces body. Schema: `tenant-cert-nonce-request`. Made by
 * {@link import('./message.js').signNonceRequest}: the signature is the consumer's registered key over
 * {@link import('./message.js').nonceRequestMessage}.
 */
export interface NonceRequest {
  consumerClusterID: string;
  providerClusterID: string;
  /** RFC 3339 time of the request; refused beyond {@link NONCE_REQUEST_MAX_SKEW_MS} of the issuer's clock. */
  timestamp: string;
  /** Standard base64 of the raw signature bytes. */
  signature: string;
}

/** The subject the issuer will put in the certificate; a CSR may ask for it, or for less, never for more. */
export interface GrantedSubject {
  commonName: string;
  organizations: string[];
}

/** POST /v1/nonces answer. Schema: `tenant-cert-nonce-response`. */
export interface NonceResponse {
  /** 64 random bytes, standard base64: an 88-character string. Single use. */
  nonce: string;
  /** RFC 3339; a Tenant presenting the nonce later is refused. */
  expiresAt: string;
  providerClusterID: string;
  consumerClusterID: string;
  /** What the certificate will say. With the Kubernetes signer the CSR must ask for exactly this. */
  subject: GrantedSubject;
}

/** How `spec.signature` was made. */
export type SignatureFormat =
  /** Over the {@link import('./message.js').tenantMessage} context-bound message (default). */
  | 'context-v1'
  /** Over the UTF-8 bytes of the nonce string alone, as Liqo signs; only accepted by an issuer in Liqo-compat mode. */
  | 'liqo-nonce';

/** The consumer's request. Schema: `tenant-cert-tenant` (also accepts Liqo's Tenant). */
export interface TenantDocument {
  apiVersion: typeof API_VERSION;
  kind: 'Tenant';
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    /** The consumer cluster ID. */
    clusterID: string;
    providerClusterID: string;
    /** The nonce string as the issuer gave it. */
    nonce: string;
    /** Standard base64 of the PEM SPKI public key (or of the raw 32-byte Ed25519 key). */
    publicKey: string;
    /** Standard base64 of the PEM PKCS#10 request. */
    csr: string;
    /** Standard base64 of the raw signature bytes. */
    signature: string;
    signatureFormat?: SignatureFormat;
  };
}

/** Liqo's Tenant as `liqoctl generate tenant` prints it (only the fields the issuer reads are typed). */
export interface LiqoTenantDocument {
  apiVersion: typeof LIQO_API_VERSION;
  kind: 'Tenant';
  metadata?: { name?: string; labels?: Record<string, string> };
  spec: {
    clusterID: string;
    publicKey: string;
    csr: string;
    signature: string;
    authzPolicy?: string;
    proxyURL?: string;
    tenantCondition?: string;
  };
}

export interface AuthParams {
  /** Standard base64 of the API server's CA bundle (PEM); absent when the issuer was not told. */
  ca?: string;
  /** Standard base64 of the issued certificate (PEM). */
  signedCRT: string;
  apiServer?: string;
  proxyURL?: string;
}

/** The provider's answer. Schema: `tenant-cert-identity` (also accepts Liqo's Identity). */
export interface IdentityDocument {
  apiVersion: typeof API_VERSION;
  kind: 'Identity';
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    /** The provider cluster ID. */
    clusterID: string;
    consumerClusterID: string;
    authParams: AuthParams;
    /** RFC 3339 validity of signedCRT (informational: the certificate is authoritative). */
    notBefore: string;
    notAfter: string;
  };
}

export interface LiqoIdentityDocument {
  apiVersion: typeof LIQO_API_VERSION;
  kind: 'Identity';
  metadata: { name: string; labels?: Record<string, string>; creationTimestamp?: null };
  spec: {
    clusterID: string;
    type: 'ControlPlane' | 'ResourceSlice';
    authParams: AuthParams;
    namespace?: string;
  };
  status?: Record<string, unknown>;
}

/** Every non-2xx answer. Schema: `tenant-cert-error`. */
export interface ErrorResponse {
  code: string;
  message: string;
  path?: string;
  hint?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Client side: build the request, send it (caller), process the response.

export interface HttpRequestSpec {
  method: 'GET' | 'POST';
  /** Relative to the issuer URL. */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface HttpResponseSpec {
  status: number;
  /** The raw body text. */
  body: string;
}

/**
 * @example
 * ```ts
 * const request = buildNonceRequest(signNonceRequest(privateKey, { consumerClusterID: 'c1', providerClusterID: 'p1' }, now));
 * const response = await send(issuerURL, request); // the caller's HTTPS seam
 * const nonce = processNonceResponse(response, { consumerClusterID: 'c1', providerClusterID: 'p1' });
 * ```
 */
export function buildNonceRequest(body: NonceRequest): HttpRequestSpec {
  return jsonRequest(API_PATHS.nonces, body);
}

export function buildTenantRequest(tenant: TenantDocument): HttpRequestSpec {
  return jsonRequest(API_PATHS.tenants, tenant);
}

function jsonRequest(path: string, body: unknown): HttpRequestSpec {
  return {
    method: 'POST',
    path,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
  };
}

/**
 * Checks a nonce answer: 201, the documented shape, and that it is for the consumer and provider we expect (a
 * misdirected issuer URL surfaces here, not later as a signature error). Throws the issuer's own error for non-2xx.
 */
export function processNonceResponse(
  response: HttpResponseSpec,
  expected: { consumerClusterID: string; providerClusterID?: string },
): NonceResponse {
  const body = parseJsonBody(response);
  const document = body as Partial<NonceResponse>;
  if (
    typeof document.nonce !== 'string' ||
    typeof document.expiresAt !== 'string' ||
    typeof document.providerClusterID !== 'string' ||
    typeof document.consumerClusterID !== 'string' ||
    typeof document.subject !== 'object' ||
    document.subject === null
  ) {
    throw tenantError('ERR_ISSUER_RESPONSE', 'the issuer answered a nonce document of an unexpected shape');
  }
  if (document.consumerClusterID !== expected.consumerClusterID) {
    throw tenantError(
      'ERR_ISSUER_RESPONSE',
      `the issuer issued a nonce for ${document.consumerClusterID}, not for ${expected.consumerClusterID}`,
    );
  }
  if (expected.providerClusterID !== undefined && document.providerClusterID !== expected.providerClusterID) {
    throw tenantError(
      'ERR_TENANT_PROVIDER_MISMATCH',
      `the issuer is cluster ${document.providerClusterID}, expected ${expected.providerClusterID}`,
      { hint: 'check providerClusterID and issuerURL in the ClusterProfile' },
    );
  }
  return document as NonceResponse;
}

/** Checks an Identity answer: 201 and the documented shape. The caller checks the certificate itself. */
export function processIdentityResponse(response: HttpResponseSpec): IdentityDocument {
  const body = parseJsonBody(response) as Partial<IdentityDocument>;
  if (
    body.apiVersion !== API_VERSION ||
    body.kind !== 'Identity' ||
    typeof body.spec?.authParams?.signedCRT !== 'string'
  ) {
    throw tenantError('ERR_ISSUER_RESPONSE', 'the issuer answered an Identity of an unexpected shape');
  }
  return body as IdentityDocument;
}

function parseJsonBody(response: HttpResponseSpec): unknown {
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch (cause) {
    throw tenantError(
      'ERR_ISSUER_RESPONSE',
      `the issuer answered HTTP ${response.status} with a body that is not JSON`,
      { cause },
    );
  }
  if (response.status < 200 || response.status > 299) {
    throw errorFromResponse(response.status, body);
  }
  return body;
}

/**
 * The issuer's error document as a {@link CredentialsError} with the issuer's code (so a client reports
 * `ERR_TENANT_NONCE_EXPIRED`, not "HTTP 403").
 */
export function errorFromResponse(status: number, body: unknown): CredentialsError {
  const document = body as Partial<ErrorResponse> | null;
  if (
    document !== null &&
    typeof document === 'object' &&
    typeof document.code === 'string' &&
    /^ERR_[A-Z0-9_]+$/.test(document.code)
  ) {
    // The issuer's code as sent: possibly one this copy does not know (then neither exit code nor retry is derived).
    return new CredentialsError(
      document.code as ErrorCode,
      `the issuer refused (HTTP ${status}): ${String(document.message)}`,
      {
        ...(typeof document.path === 'string' ? { path: document.path } : {}),
        ...(typeof document.hint === 'string' ? { hint: document.hint } : {}),
      },
    );
  }
  return tenantError('ERR_ISSUER_RESPONSE', `the issuer answered HTTP ${status} without an error document`);
}

/** True for answers a client should retry with backoff (the issuer or its signer is unavailable). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
