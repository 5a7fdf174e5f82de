/**
 * Every error code the package raises, in one place: what it means, the exit code a binary ends with when it is the
 * reason (2: the user must change a flag, a file or the configuration; 1: anything else), the HTTP status the
 * tenant-cert issuer answers it with (codes the issuer sends only) and whether trying again later, unchanged, may
 * succeed. `CredentialsError` reads `exitCode`, `httpStatus` and `retryable` from here. What each code means, and the
 * area that raises it, is in ./error-docs.ts (every code must have an entry there: the compiler checks it);
 * `docs/reference/errors.md` is generated from both (`npm run docs:errors`).
 *
 * Plugins load this module on every start: it stays one small object literal with no imports, and the sentences
 * live in ./error-docs.ts, which no binary loads.
 */

export interface ErrorSpec {
  /** The exit code of a binary that ends with this error. */
  readonly exit: 1 | 2;
  /** The status the tenant-cert issuer answers with; only codes the issuer sends. */
  readonly http?: number;
  /** Whether the same call may succeed later without any change (the tenant-cert client retries these). */
  readonly retryable: boolean;
}

export const ERRORS = {
  // node: every entry point, before anything else (src/base/node-floor.ts)
  ERR_NODE_VERSION: { exit: 1, retryable: false },

  // library: the providers file and ClusterProfile resolution
  ERR_ACCESS_CONFIG_READ: { exit: 1, retryable: false },
  ERR_ACCESS_CONFIG_PARSE: { exit: 1, retryable: false },
  ERR_ACCESS_CONFIG_INVALID: { exit: 1, retryable: false },
  ERR_PROFILE_INVALID: { exit: 1, retryable: false },
  ERR_NO_MATCHING_PROVIDER: { exit: 1, retryable: false },
  ERR_NO_EXEC_CONFIG: { exit: 1, retryable: false },
  ERR_EXTENSION_INVALID: { exit: 1, retryable: false },
  ERR_POLICY_UNSUPPORTED: { exit: 1, retryable: false },
  ERR_PROFILE_ENV_DENIED: { exit: 1, retryable: false },
  ERR_PROFILE_INSECURE_TLS_DENIED: { exit: 1, retryable: false },

  // library: the fleet manager (ClusterProfileFleet)
  ERR_FLEET_OPTIONS: { exit: 2, retryable: false },
  ERR_FLEET_HUB_UNREACHABLE: { exit: 1, retryable: true },
  ERR_FLEET_HUB_FORBIDDEN: { exit: 1, retryable: false },
  ERR_FLEET_HUB_REQUEST: { exit: 1, retryable: false },
  ERR_FLEET_CREDENTIAL_TIMEOUT: { exit: 1, retryable: true },
  ERR_FLEET_CLOSED: { exit: 1, retryable: false },
  ERR_FLEET_MEMBER_UNKNOWN: { exit: 1, retryable: false },
  ERR_FLEET_DUPLICATE_MEMBER: { exit: 1, retryable: false },
  ERR_FLEET_LEASE_FORBIDDEN: { exit: 1, retryable: false },
  ERR_FLEET_LEASE_REQUEST: { exit: 1, retryable: true },
  ERR_FLEET_LEASE_INVALID: { exit: 1, retryable: false },
  ERR_FLEET_REPLICA_IDENTITY: { exit: 2, retryable: false },
  ERR_FLEET_SHARD_CONFIG: { exit: 2, retryable: false },

  // backstage: the Backstage backend module (plugins/kubernetes-backend-module-clusterprofile)
  ERR_BACKSTAGE_CONFIG: { exit: 2, retryable: false },

  // exec: running a credential plugin (client-go's exec authenticator)
  ERR_EXEC_CONFIG_INVALID: { exit: 1, retryable: false },
  ERR_EXEC_NOT_FOUND: { exit: 1, retryable: false },
  ERR_EXEC_FAILED: { exit: 1, retryable: false },
  ERR_EXEC_TIMEOUT: { exit: 1, retryable: true },
  ERR_EXEC_OUTPUT_INVALID: { exit: 1, retryable: false },
  ERR_EXEC_API_VERSION_MISMATCH: { exit: 1, retryable: false },
  ERR_EXEC_RECURSION: { exit: 1, retryable: false },
  ERR_EXEC_INTERACTIVE: { exit: 1, retryable: false },
  ERR_EXEC_PLUGIN_POLICY_INVALID: { exit: 1, retryable: false },
  ERR_EXEC_PLUGIN_DENIED: { exit: 1, retryable: false },

  // plugin: the runtime every plugin binary shares
  ERR_PLUGIN_USAGE: { exit: 2, retryable: false },
  ERR_PLUGIN_EXEC_INFO: { exit: 2, retryable: false },
  ERR_PLUGIN_BAD_CREDENTIAL: { exit: 1, retryable: false },
  ERR_PLUGIN_CACHE_INSECURE: { exit: 1, retryable: false },
  ERR_PLUGIN_CACHE_IO: { exit: 1, retryable: false },
  ERR_PLUGIN_CACHE_LOCKED: { exit: 1, retryable: true },
  ERR_PLUGIN_INTERRUPTED: { exit: 1, retryable: true },

  // kube: talking to Kubernetes API servers, kubeconfig and in-cluster identities
  ERR_KUBE_ENDPOINT: { exit: 1, retryable: false },
  ERR_KUBE_UNREACHABLE: { exit: 1, retryable: true },
  ERR_KUBE_RESPONSE_TOO_LARGE: { exit: 1, retryable: false },
  ERR_KUBECONFIG_READ: { exit: 1, retryable: false },
  ERR_KUBECONFIG_INVALID: { exit: 1, retryable: false },
  ERR_IN_CLUSTER_UNAVAILABLE: { exit: 1, retryable: false },

  // tenant-cert: the plugin, its client of the issuer and the consumer-side commands
  ERR_TENANT_CERT_FLAG: { exit: 2, retryable: false },
  ERR_TENANT_CERT_CONFIG: { exit: 2, retryable: false },
  ERR_TENANT_CERT_KEY_FILE: { exit: 2, retryable: false },
  ERR_TENANT_CERT_NO_ISSUER: { exit: 1, retryable: false },
  ERR_TENANT_CERT_SUBJECT: { exit: 1, retryable: false },
  ERR_TENANT_CERT_BAD_CERTIFICATE: { exit: 1, retryable: false },
  ERR_TENANT_CERT_CLOCK_SKEW: { exit: 1, retryable: false },
  ERR_TENANT_CERT_IDENTITY_INVALID: { exit: 1, retryable: false },
  ERR_TENANT_CERT_IDENTITY_STORE: { exit: 1, retryable: false },
  ERR_TENANT_CERT_ISSUER_UNREACHABLE: { exit: 1, retryable: true },
  ERR_TENANT_CERT_ISSUER_TLS: { exit: 1, retryable: false },
  ERR_TENANT_CERT_ISSUER_TIMEOUT: { exit: 1, retryable: true },
  ERR_TENANT_CERT_ISSUER_ERROR: { exit: 1, retryable: true },
  ERR_ISSUER_RESPONSE: { exit: 1, retryable: false },
  ERR_IDENTITY_READ: { exit: 1, retryable: false },
  ERR_IDENTITY_MISMATCH: { exit: 1, retryable: false },
  ERR_IDENTITY_KUBECONFIG: { exit: 1, retryable: false },
  ERR_KEYGEN_EXISTS: { exit: 1, retryable: false },
  ERR_KEYGEN_WRITE: { exit: 1, retryable: false },

  // issuer: refusals of a nonce request or a Tenant (sent to the client with their status), and the issuer's own trouble
  ERR_TENANT_INVALID_DOCUMENT: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_BAD_BASE64: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_BAD_PEM: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_UNSUPPORTED_KEY: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_PROVIDER_MISMATCH: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_LIQO_COMPAT_DISABLED: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_UNKNOWN_CONSUMER: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_KEY_NOT_TRUSTED: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_NONCE_REQUEST_STALE: { exit: 1, http: 403, retryable: true },
  ERR_TENANT_NONCE_REQUEST_REPLAYED: { exit: 1, http: 403, retryable: true },
  ERR_TENANT_NONCE_UNKNOWN: { exit: 1, http: 403, retryable: true },
  ERR_TENANT_NONCE_REUSED: { exit: 1, http: 403, retryable: true },
  ERR_TENANT_NONCE_EXPIRED: { exit: 1, http: 403, retryable: true },
  ERR_TENANT_NONCE_WRONG_CONSUMER: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_SIGNATURE_INVALID: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_CSR_SIGNATURE_INVALID: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_CSR_KEY_MISMATCH: { exit: 1, http: 400, retryable: false },
  ERR_TENANT_CSR_SUBJECT: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_CSR_GROUPS: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_CSR_SANS: { exit: 1, http: 403, retryable: false },
  ERR_TENANT_CSR_EXTENSIONS: { exit: 1, http: 403, retryable: false },
  ERR_ISSUER_SIGNER_FAILED: { exit: 1, http: 502, retryable: true },
  ERR_ISSUER_SIGNER_DENIED: { exit: 1, http: 403, retryable: false },
  ERR_ISSUER_SIGNER_TIMEOUT: { exit: 1, http: 504, retryable: true },
  ERR_ISSUER_NOT_FOUND: { exit: 1, http: 404, retryable: false },
  ERR_ISSUER_METHOD_NOT_ALLOWED: { exit: 1, http: 405, retryable: false },
  ERR_ISSUER_BODY_TOO_LARGE: { exit: 1, http: 413, retryable: false },
  ERR_ISSUER_UNSUPPORTED_MEDIA_TYPE: { exit: 1, http: 415, retryable: false },
  ERR_ISSUER_INTERNAL: { exit: 1, http: 500, retryable: true },
  ERR_ISSUER_BUSY: { exit: 1, http: 503, retryable: true },
  ERR_ISSUER_NOT_READY: { exit: 1, http: 503, retryable: true },
  ERR_ISSUER_DATA_DIR: { exit: 1, http: 500, retryable: false },
  ERR_ISSUER_DATA_DIR_LOCKED: { exit: 1, retryable: true },
  ERR_ISSUER_TRUST_RECORD: { exit: 1, http: 500, retryable: false },
  ERR_ISSUER_CONFIG: { exit: 1, retryable: false },
  ERR_ISSUER_BAD_GROUP: { exit: 1, retryable: false },
  ERR_ISSUER_NOT_TRUSTED: { exit: 1, retryable: false },
  ERR_ISSUER_STATE_UNAVAILABLE: { exit: 1, http: 503, retryable: true },
  ERR_ISSUER_STATE_FORBIDDEN: { exit: 1, http: 503, retryable: true },
  ERR_ISSUER_STATE_CORRUPT: { exit: 1, http: 500, retryable: false },
  ERR_TENANT_INPUT: { exit: 1, retryable: false },

  // tenant-cert: the declarative flow (Tenant and Identity resources on the provider cluster)
  ERR_TENANT_FLOW_API: { exit: 1, retryable: false },
  ERR_TENANT_FLOW_TIMEOUT: { exit: 1, retryable: true },
  ERR_TENANT_FLOW_NO_IDENTITY: { exit: 1, retryable: false },

  // token-request: the plugin (TokenRequest and Secret Reader modes) and token sync
  ERR_TOKEN_REQUEST_SETTINGS: { exit: 2, retryable: false },
  ERR_TOKEN_REQUEST_USAGE: { exit: 2, retryable: false },
  ERR_TOKEN_REQUEST_UNAUTHORIZED: { exit: 1, retryable: false },
  ERR_TOKEN_REQUEST_FORBIDDEN: { exit: 1, retryable: false },
  ERR_TOKEN_REQUEST_NOT_FOUND: { exit: 1, retryable: false },
  ERR_TOKEN_REQUEST_REJECTED: { exit: 1, retryable: false },
  ERR_TOKEN_REQUEST_RESPONSE_INVALID: { exit: 1, retryable: false },
  ERR_TOKEN_REQUEST_BOOTSTRAP: { exit: 1, retryable: false },
  ERR_TOKEN_REQUEST_BOOTSTRAP_SERVER: { exit: 2, retryable: false },
  ERR_SECRET_READER_CONFIG: { exit: 1, retryable: false },
  ERR_SECRET_READER_GET: { exit: 1, retryable: false },
  ERR_SECRET_READER_NO_TOKEN: { exit: 1, retryable: false },
  ERR_SECRET_READER_NOT_A_TOKEN: { exit: 1, retryable: false },
  ERR_TOKEN_SYNC_USAGE: { exit: 1, retryable: false },
  ERR_TOKEN_SYNC_HUB: { exit: 1, retryable: false },
  ERR_TOKEN_SYNC_BOOTSTRAP: { exit: 1, retryable: false },

  // oidc: the OpenID Connect plugin
  ERR_OIDC_CONFIG: { exit: 2, retryable: false },
  ERR_OIDC_FILE: { exit: 1, retryable: false },
  ERR_OIDC_ISSUER_UNREACHABLE: { exit: 1, retryable: true },
  ERR_OIDC_DISCOVERY: { exit: 1, retryable: false },
  ERR_OIDC_CLIENT_AUTH_UNSUPPORTED: { exit: 1, retryable: false },
  ERR_OIDC_ISSUER_MISMATCH: { exit: 1, retryable: false },
  ERR_OIDC_GRANT: { exit: 1, retryable: false },
  ERR_OIDC_REFRESH_FAILED: { exit: 1, retryable: false },
  ERR_OIDC_INTERACTIVE_REQUIRED: { exit: 1, retryable: false },
  ERR_OIDC_LOGIN_FAILED: { exit: 1, retryable: false },
  ERR_OIDC_TOKEN_INVALID: { exit: 1, retryable: false },

  // cli: the clusterprofile command
  ERR_USAGE: { exit: 2, retryable: false },
  ERR_PROFILE_READ: { exit: 1, retryable: false },
  ERR_PROFILE_PARSE: { exit: 1, retryable: false },
  ERR_PROFILE_NOT_FOUND: { exit: 1, retryable: false },
  ERR_HUB_CONFIG: { exit: 1, retryable: false },
  ERR_HUB_REQUEST: { exit: 1, retryable: false },
} as const satisfies Readonly<Record<`ERR_${string}`, ErrorSpec>>;

/** Every code the package raises. */
export type ErrorCode = keyof typeof ERRORS;
