/**
 * What every error code means, for people: the area that raises it (groups docs/reference/errors.md) and one line saying when
 * it happens and what to do. Kept apart from ./error-registry.ts so that no binary loads these sentences on start;
 * `npm run docs:errors` joins both into docs/reference/errors.md, and the type below makes a code without an entry (or an entry
 * for a code that does not exist) a compile error.
 */
import type { ErrorCode } from './error-registry.js';

/** Where a code is raised; groups the generated documentation. */
export type ErrorArea =
  | 'node'
  | 'library'
  | 'exec'
  | 'plugin'
  | 'kube'
  | 'tenant-cert'
  | 'issuer'
  | 'token-request'
  | 'oidc'
  | 'cli'
  | 'backstage';

export interface ErrorDoc {
  readonly area: ErrorArea;
  /** One line: when it happens, what to do. */
  readonly doc: string;
}

export const ERROR_DOCS: { readonly [C in ErrorCode]: ErrorDoc } = {
  // node: every entry point, before anything else (src/base/node-floor.ts)
  ERR_NODE_VERSION: {
    area: 'node',
    doc: 'The Node.js running a binary or importing the library is older than the package needs (engines): the message names both versions and the node binary; put a newer node first on PATH.',
  },

  // library: the providers file and ClusterProfile resolution
  ERR_ACCESS_CONFIG_READ: {
    area: 'library',
    doc: 'The providers file cannot be read (path = the file): check the path and its permissions.',
  },
  ERR_ACCESS_CONFIG_PARSE: {
    area: 'library',
    doc: 'The providers file is not JSON/YAML, is empty or is not one object: fix the file.',
  },
  ERR_ACCESS_CONFIG_INVALID: {
    area: 'library',
    doc: 'The providers file (or an AccessConfig built in code) breaks its schema; path = the JSON path of the first problem.',
  },
  ERR_PROFILE_INVALID: {
    area: 'library',
    doc: 'The ClusterProfile has an unknown apiVersion or breaks its schema (e.g. no server); path = the JSON path.',
  },
  ERR_NO_MATCHING_PROVIDER: {
    area: 'library',
    doc: 'No access provider of the profile has a name in the providers file: the hint lists both sides; align the names.',
  },
  ERR_NO_EXEC_CONFIG: { area: 'library', doc: 'The chosen providers-file entry has no execConfig: add one.' },
  ERR_EXTENSION_INVALID: {
    area: 'library',
    doc: 'The additional CLI args / env vars extension of the profile has the wrong shape; path = the extension.',
  },
  ERR_PROFILE_ENV_DENIED: {
    area: 'library',
    doc: "The profile's additional-envs extension sets a variable that can take over the plugin or redirect its credentials (NODE_OPTIONS, LD_PRELOAD, PATH, KUBECONFIG, ...); path = the variable: remove it, or allow it in the providers-file entry's allowedProfileEnvVars.",
  },
  ERR_PROFILE_INSECURE_TLS_DENIED: {
    area: 'library',
    doc: "The profile's cluster turns TLS verification off (insecure-skip-tls-verify: true) and the providers-file entry does not allow it: give the cluster a CA, or set allowInsecureSkipTLSVerify: true on the entry.",
  },
  ERR_POLICY_UNSUPPORTED: {
    area: 'library',
    doc: 'An unknown profileSourcedCLIArgsPolicy / profileSourcedEnvVarsPolicy while the profile carries that extension: use a supported policy.',
  },

  // library: the fleet manager (ClusterProfileFleet)
  ERR_FLEET_OPTIONS: {
    area: 'library',
    doc: 'A bad fleet option (namespace, accessConfig, a bound below 1), or start() called twice; path names the option.',
  },
  ERR_FLEET_HUB_UNREACHABLE: {
    area: 'library',
    doc: "The fleet cannot list or watch ClusterProfiles: the hub's API server did not answer (the message names the verb, resource and namespace); retried with backoff.",
  },
  ERR_FLEET_HUB_FORBIDDEN: {
    area: 'library',
    doc: "The hub refused list or watch on clusterprofiles.multicluster.x-k8s.io in the namespace (401/403), or the hub user's exec plugin failed: grant get, list, watch.",
  },
  ERR_FLEET_HUB_REQUEST: {
    area: 'library',
    doc: 'Any other hub answer to a list or watch (404: the ClusterProfile CRD is not served; a broken watch stream).',
  },
  ERR_FLEET_CREDENTIAL_TIMEOUT: {
    area: 'library',
    doc: "An in-process provider did not return a member's credential within the fleet's fetchTimeoutMs and was aborted; retried with backoff.",
  },
  ERR_FLEET_CLOSED: {
    area: 'library',
    doc: "The fleet was closed, or the member was removed from it, while a call was under way; or a sharded fleet's member client was used after its shard went to another replica (the client is revoked).",
  },
  ERR_FLEET_LEASE_FORBIDDEN: {
    area: 'library',
    doc: "A sharded fleet's replica may not write Leases (coordination.k8s.io) in its leaseNamespace (401/403): grant get, list, create and update on leases there. Until then it owns no member.",
  },
  ERR_FLEET_LEASE_REQUEST: {
    area: 'library',
    doc: "A sharded fleet's Lease request failed (API server unreachable, timeout, another status); retried every renew period. A replica that cannot renew stops acting on its members at its fencing deadline.",
  },
  ERR_FLEET_LEASE_INVALID: {
    area: 'library',
    doc: "A Lease of a sharded fleet does not read as one (holderIdentity, leaseDurationSeconds or the fleet's annotations edited into something else): treated as held until it stays unchanged for a lease duration, then taken over.",
  },
  ERR_FLEET_REPLICA_IDENTITY: {
    area: 'library',
    doc: 'Another process renews the replica Lease of this sharding identity: two replicas were given the same identity (use the pod name). Shard Leases still fence them: a shard is held by one process at a time.',
  },
  ERR_FLEET_SHARD_CONFIG: {
    area: 'library',
    doc: 'Replicas of one sharded fleet disagree on the number of shards: the replica with the other count is left out of the assignment until the Deployment is consistent.',
  },
  ERR_FLEET_MEMBER_UNKNOWN: {
    area: 'library',
    doc: "The fleet's inventory has no ClusterProfile of that name (never had, or it was deleted): list the members again.",
  },
  ERR_FLEET_DUPLICATE_MEMBER: {
    area: 'library',
    doc: 'Two ClusterProfiles of one inventory namespace carry the same multicluster.x-k8s.io/inventory-member-id label: the fleet engages the member once, through the profile that had it first, and reports the other (invalid) until the first lets go; give each profile its own member ID.',
  },

  // backstage: the Backstage backend module
  ERR_BACKSTAGE_CONFIG: {
    area: 'backstage',
    doc: "A key of the Backstage module's configuration is missing or of the wrong type, or what it names cannot be used (the hub, the namespace, the providers file): the message names the key.",
  },

  // exec: running a credential plugin (client-go's exec authenticator)
  ERR_EXEC_CONFIG_INVALID: {
    area: 'exec',
    doc: 'The exec config cannot run: no command, unknown apiVersion or interactiveMode; fix the execConfig.',
  },
  ERR_EXEC_NOT_FOUND: {
    area: 'exec',
    doc: "The plugin command does not exist or is not executable: install it (the message carries installHint); for one of this package's plugins the hint names its node_modules/.bin and the two fixes (PATH, or an absolute command).",
  },
  ERR_EXEC_FAILED: {
    area: 'exec',
    doc: 'The plugin could not start, exited non-zero or was killed by a signal: read its stderr in the message.',
  },
  ERR_EXEC_TIMEOUT: {
    area: 'exec',
    doc: 'The plugin ran past the timeout and its process group was killed: check what it waits for, or raise the timeout.',
  },
  ERR_EXEC_OUTPUT_INVALID: {
    area: 'exec',
    doc: 'The plugin printed something that is not an ExecCredential client-go accepts (or too much): a plugin bug.',
  },
  ERR_EXEC_API_VERSION_MISMATCH: {
    area: 'exec',
    doc: 'The plugin answered in another apiVersion than the exec config asks for: align them.',
  },
  ERR_EXEC_RECURSION: {
    area: 'exec',
    doc: 'Exec plugins are nested deeper than the limit (a plugin running kubectl running the plugin ...): break the loop.',
  },
  ERR_EXEC_PLUGIN_POLICY_INVALID: {
    area: 'exec',
    doc: 'The credential plugin policy given to the exec layer is malformed (unknown policy type, an allowlist with another policy, an empty or non-normalized allowlist): fix the option.',
  },
  ERR_EXEC_PLUGIN_DENIED: {
    area: 'exec',
    doc: 'The credential plugin policy does not let this command run (DenyAll, not on the allowlist, or not resolvable for the allowlist check): add it to the allowlist or change the policy.',
  },
  ERR_EXEC_INTERACTIVE: {
    area: 'exec',
    doc: 'interactiveMode Always without a terminal on stdin: run from a terminal or change interactiveMode.',
  },

  // plugin: the runtime every plugin binary shares
  ERR_PLUGIN_USAGE: {
    area: 'plugin',
    doc: 'Unknown flag, missing required flag or value, unexpected argument, empty --cache-dir: see --help.',
  },
  ERR_PLUGIN_EXEC_INFO: {
    area: 'plugin',
    doc: 'KUBERNETES_EXEC_INFO is not JSON or not a valid ExecCredential input (path names the field): fix the kubeconfig exec section.',
  },
  ERR_PLUGIN_BAD_CREDENTIAL: {
    area: 'plugin',
    doc: 'The provider returned a credential client-go would reject: a provider bug, report it.',
  },
  ERR_PLUGIN_CACHE_INSECURE: {
    area: 'plugin',
    doc: 'The cache directory or an entry is accessible by group/others, not yours, or a symlink: the hint gives the chmod/rm.',
  },
  ERR_PLUGIN_CACHE_IO: {
    area: 'plugin',
    doc: 'The cache directory, an entry or a lock cannot be created, read or removed: check the path and its permissions.',
  },
  ERR_PLUGIN_CACHE_LOCKED: {
    area: 'plugin',
    doc: 'Another process held the cache entry lock too long (the message names its pid): if it is gone, remove the lock file.',
  },
  ERR_PLUGIN_INTERRUPTED: { area: 'plugin', doc: 'SIGINT/SIGTERM/SIGHUP while obtaining a credential: run again.' },

  // kube: talking to Kubernetes API servers, kubeconfig and in-cluster identities
  ERR_KUBE_ENDPOINT: { area: 'kube', doc: 'The API server URL is not an https URL: fix the server of the cluster.' },
  ERR_KUBE_UNREACHABLE: {
    area: 'kube',
    doc: 'The API server did not answer (connection, DNS, TLS or timeout; after retries): check the URL, CA and network.',
  },
  ERR_KUBE_RESPONSE_TOO_LARGE: {
    area: 'kube',
    doc: 'An API server answer was larger than the limit and was refused: the server is not what it should be.',
  },
  ERR_KUBECONFIG_READ: {
    area: 'kube',
    doc: 'A kubeconfig (or a file it names) cannot be read: check the path and its permissions.',
  },
  ERR_KUBECONFIG_INVALID: {
    area: 'kube',
    doc: 'A kubeconfig is not YAML, lacks the context, cluster, server or user it needs, or its user is not a static credential; path = the file and field.',
  },
  ERR_IN_CLUSTER_UNAVAILABLE: {
    area: 'kube',
    doc: 'No in-cluster service account (KUBERNETES_SERVICE_HOST/PORT unset or token unreadable): pass a kubeconfig instead.',
  },

  // tenant-cert: the plugin, its client of the issuer and the consumer-side commands
  ERR_TENANT_CERT_FLAG: {
    area: 'tenant-cert',
    doc: 'A bad --cluster-id or --timeout, or no --identity-dir and no HOME: see --help.',
  },
  ERR_TENANT_CERT_CONFIG: {
    area: 'tenant-cert',
    doc: 'A spec.cluster.config field (providerClusterID, issuerURL, issuerCA, clientCA) is missing or malformed: fix the exec extension; set provideClusterInfo: true.',
  },
  ERR_TENANT_CERT_KEY_FILE: {
    area: 'tenant-cert',
    doc: 'The key file (--key-file) is missing, not a PKCS#8 PEM private key that decodes (the message says what it holds instead) or accessible by others: chmod 600 it, or make one with clusterprofile keygen.',
  },
  ERR_TENANT_CERT_NO_ISSUER: {
    area: 'tenant-cert',
    doc: 'No Identity was imported for this provider and no issuerURL/issuerCA is configured: set them, or run clusterprofile identity import.',
  },
  ERR_TENANT_CERT_SUBJECT: {
    area: 'tenant-cert',
    doc: 'The issuer would certify another CN than --cluster-id: check --cluster-id and the issuer policy.',
  },
  ERR_TENANT_CERT_BAD_CERTIFICATE: {
    area: 'tenant-cert',
    doc: 'The returned or imported certificate is for another CN or key, not signed by the client CA, expired or unparsable: re-import, or check the issuer signer.',
  },
  ERR_TENANT_CERT_CLOCK_SKEW: {
    area: 'tenant-cert',
    doc: 'A certificate valid only in the future, or already past its renewal point, by our clock: fix NTP on either side.',
  },
  ERR_TENANT_CERT_IDENTITY_INVALID: {
    area: 'tenant-cert',
    doc: 'An imported Identity is malformed, for another provider or consumer, or not a ControlPlane identity: import it again.',
  },
  ERR_TENANT_CERT_IDENTITY_STORE: {
    area: 'tenant-cert',
    doc: 'The identity store cannot be written, or a stored Identity is writable by others: check the --identity-dir permissions.',
  },
  ERR_TENANT_CERT_ISSUER_UNREACHABLE: {
    area: 'tenant-cert',
    doc: 'The issuer refused the connection, reset it or its name did not resolve (after retries): is the issuer running, is issuerURL right?',
  },
  ERR_TENANT_CERT_ISSUER_TLS: {
    area: 'tenant-cert',
    doc: "The issuer's certificate does not verify against issuerCA (or is not for the host): issuerCA must be base64 of the issuer's serving-ca.crt.",
  },
  ERR_TENANT_CERT_ISSUER_TIMEOUT: {
    area: 'tenant-cert',
    doc: "The issuer did not answer within --timeout (or the run was aborted): check the issuer's load and the network, or raise --timeout.",
  },
  ERR_TENANT_CERT_ISSUER_ERROR: {
    area: 'tenant-cert',
    doc: "The issuer answered 5xx/429 with no error document or with a code of its own trouble, or an answer over 1 MiB (after retries): read the issuer's log.",
  },
  ERR_ISSUER_RESPONSE: {
    area: 'tenant-cert',
    doc: 'The issuer answered something that is not the documented document (not JSON, wrong shape, a nonce for someone else): is issuerURL an issuer?',
  },
  ERR_IDENTITY_READ: {
    area: 'tenant-cert',
    doc: 'identity import: no FILE given, or the Identity cannot be read: give a readable file, or - for stdin.',
  },
  ERR_IDENTITY_MISMATCH: {
    area: 'tenant-cert',
    doc: "identity import: --cluster-id differs from the Identity's consumer cluster: import the right Identity.",
  },
  ERR_IDENTITY_KUBECONFIG: {
    area: 'tenant-cert',
    doc: 'identity import --kubeconfig: the Identity names no apiServer (pass --server) or the kubeconfig cannot be written.',
  },
  ERR_KEYGEN_EXISTS: {
    area: 'tenant-cert',
    doc: 'keygen: the output file exists; a key is never overwritten without --force.',
  },
  ERR_KEYGEN_WRITE: {
    area: 'tenant-cert',
    doc: 'keygen: the key cannot be written: check the directory and its permissions.',
  },

  // issuer: refusals of a nonce request or a Tenant (sent to the client with their status), and the issuer's own trouble
  ERR_TENANT_INVALID_DOCUMENT: {
    area: 'issuer',
    doc: 'The nonce request or Tenant is not JSON/YAML or breaks its schema; path = the JSON path.',
  },
  ERR_TENANT_BAD_BASE64: { area: 'issuer', doc: 'A []byte field is not standard padded base64; path = the field.' },
  ERR_TENANT_BAD_PEM: {
    area: 'issuer',
    doc: 'A key, CSR or certificate field (or key file) is not the PEM/DER it must be; path = the field.',
  },
  ERR_TENANT_UNSUPPORTED_KEY: {
    area: 'issuer',
    doc: 'A key type that is not Ed25519, ECDSA P-256 or RSA of 2048 bits or more: make a new key (clusterprofile keygen).',
  },
  ERR_TENANT_PROVIDER_MISMATCH: {
    area: 'issuer',
    doc: 'The request is for another provider cluster than this issuer: check providerClusterID and issuerURL.',
  },
  ERR_TENANT_LIQO_COMPAT_DISABLED: {
    area: 'issuer',
    doc: 'A Liqo-shaped Tenant or a signature over the nonce alone, and the issuer runs without --liqo-compat: use clusterprofile tenant generate.',
  },
  ERR_TENANT_UNKNOWN_CONSUMER: {
    area: 'issuer',
    doc: 'The consumer cluster is not trusted by the issuer: the provider admin runs clusterprofile issuer trust.',
  },
  ERR_TENANT_KEY_NOT_TRUSTED: {
    area: 'issuer',
    doc: "The Tenant's public key is not the key registered for the consumer: sign with the registered key, or re-register.",
  },
  ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID: {
    area: 'issuer',
    doc: "The nonce request is not signed by the consumer's registered key: use the registered key.",
  },
  ERR_TENANT_NONCE_REQUEST_STALE: {
    area: 'issuer',
    doc: "The nonce request's timestamp is more than 5 minutes off the issuer's clock: the plugin re-signs at the issuer's time; fix NTP.",
  },
  ERR_TENANT_NONCE_REQUEST_REPLAYED: {
    area: 'issuer',
    doc: 'The same signed nonce request was answered before: sign a new one (the plugin does).',
  },
  ERR_TENANT_NONCE_UNKNOWN: {
    area: 'issuer',
    doc: 'The nonce was not issued by this issuer (or expired long ago): fetch a fresh nonce.',
  },
  ERR_TENANT_NONCE_REUSED: {
    area: 'issuer',
    doc: 'The nonce was already spent (one Tenant per nonce): fetch a fresh nonce.',
  },
  ERR_TENANT_NONCE_EXPIRED: {
    area: 'issuer',
    doc: 'The nonce expired before its Tenant arrived: fetch a fresh nonce, answer within --nonce-ttl.',
  },
  ERR_TENANT_NONCE_WRONG_CONSUMER: {
    area: 'issuer',
    doc: 'The nonce was issued for another consumer cluster: use your own nonce.',
  },
  ERR_TENANT_SIGNATURE_INVALID: {
    area: 'issuer',
    doc: "The Tenant's signature does not verify over the nonce, provider, consumer and CSR: sign with the registered key.",
  },
  ERR_TENANT_CSR_SIGNATURE_INVALID: {
    area: 'issuer',
    doc: "The CSR's self-signature is invalid or uses a refused algorithm (e.g. SHA-1): build the CSR again.",
  },
  ERR_TENANT_CSR_KEY_MISMATCH: {
    area: 'issuer',
    doc: "The CSR is for another key than the Tenant's: build both from one key.",
  },
  ERR_TENANT_CSR_SUBJECT: {
    area: 'issuer',
    doc: 'The CSR subject is not exactly one CN = the consumer ID (plus O): use the subject the nonce answer grants.',
  },
  ERR_TENANT_CSR_GROUPS: {
    area: 'issuer',
    doc: 'The CSR asks for groups (O) the issuer does not grant: ask for the granted groups only.',
  },
  ERR_TENANT_CSR_SANS: {
    area: 'issuer',
    doc: 'The CSR asks for subject alternative names; a client certificate gets none: remove them.',
  },
  ERR_TENANT_CSR_EXTENSIONS: {
    area: 'issuer',
    doc: 'The CSR carries attributes or extensions beyond client-auth key usages: remove them.',
  },
  ERR_ISSUER_SIGNER_FAILED: {
    area: 'issuer',
    doc: "The certificate signer failed or returned something else than the certificate asked for: read the issuer's log.",
  },
  ERR_ISSUER_SIGNER_DENIED: {
    area: 'issuer',
    doc: "The Kubernetes signer (or the API server's RBAC) refused the CSR: grant the issuer the RBAC of deploy/overlays/csr-signer/issuer-rbac.yaml.",
  },
  ERR_ISSUER_SIGNER_TIMEOUT: {
    area: 'issuer',
    doc: 'No certificate within --signer-timeout: is a signer for the signer name running (kube-controller-manager csrsigning)?',
  },
  ERR_ISSUER_NOT_FOUND: { area: 'issuer', doc: 'No such path on the issuer: the hint lists the API.' },
  ERR_ISSUER_METHOD_NOT_ALLOWED: {
    area: 'issuer',
    doc: 'The path exists but takes another method (the allow header names it).',
  },
  ERR_ISSUER_BODY_TOO_LARGE: {
    area: 'issuer',
    doc: 'The request body is over 64 KiB: send the documented document only.',
  },
  ERR_ISSUER_UNSUPPORTED_MEDIA_TYPE: { area: 'issuer', doc: 'The body is not sent as content-type: application/json.' },
  ERR_ISSUER_INTERNAL: {
    area: 'issuer',
    doc: "An unexpected issuer failure (details only in the issuer's log): retried by clients; read the log.",
  },
  ERR_ISSUER_BUSY: {
    area: 'issuer',
    doc: 'The issuer cannot take more now (data dir: too many outstanding nonces; Kubernetes state: the namespace quota refused a nonce record): try again later.',
  },
  ERR_ISSUER_NOT_READY: {
    area: 'issuer',
    doc: "GET /readyz: a readiness check failed or timed out (its name in the answer, details in the issuer's log), a background loop has failed for longer than its allowance (background:<loop>), or the issuer is shutting down.",
  },
  ERR_ISSUER_DATA_DIR: {
    area: 'issuer',
    doc: 'The data dir cannot be created, read or written, is accessible by others, lost one file of a CA pair or holds a CA file that is not what it should be (the file named): fix the directory (clients get a generic 500).',
  },
  ERR_ISSUER_DATA_DIR_LOCKED: {
    area: 'issuer',
    doc: 'Another live process holds the data dir: stop it, or use its HTTPS API.',
  },
  ERR_ISSUER_TRUST_RECORD: {
    area: 'issuer',
    doc: 'A trust record (data dir file or --state kubernetes ConfigMap) is corrupt (not JSON, wrong cluster ID, unusable key): trust the consumer again (clients get a generic 500).',
  },
  ERR_ISSUER_CONFIG: {
    area: 'issuer',
    doc: 'A bad issuer flag (--listen, durations, --api-server-url/-ca, --public-key), a data dir of another provider or a port in use: fix the flag.',
  },
  ERR_ISSUER_BAD_GROUP: {
    area: 'issuer',
    doc: 'An empty group, one with surrounding spaces or a system: group in --group: the issuer never grants those.',
  },
  ERR_ISSUER_NOT_TRUSTED: {
    area: 'issuer',
    doc: 'issuer untrust of a cluster ID that is not trusted: check issuer list.',
  },
  ERR_ISSUER_STATE_UNAVAILABLE: {
    area: 'issuer',
    doc: "--state kubernetes: the API server holding the issuer's state did not answer, timed out or answered 429/5xx; nothing was half written: clients retry (another replica may answer).",
  },
  ERR_ISSUER_STATE_FORBIDDEN: {
    area: 'issuer',
    doc: "--state kubernetes: the API server refused the issuer's ServiceAccount (401/403): grant the Role of deploy/base/issuer-state-rbac.yaml in the state namespace.",
  },
  ERR_ISSUER_STATE_CORRUPT: {
    area: 'issuer',
    doc: '--state kubernetes: a state object (CA Secret, trust record ConfigMap, nonce) is not what the issuer wrote: restore or delete it (clients get a generic 500).',
  },
  ERR_TENANT_INPUT: {
    area: 'issuer',
    doc: 'tenant accept/generate cannot read its input file or --key-file: check the path.',
  },

  // tenant-cert: the declarative flow (Tenant and Identity resources on the provider cluster)
  ERR_TENANT_FLOW_API: {
    area: 'issuer',
    doc: "The provider cluster's API server refused a request of the declarative flow (the Tenant/Identity CRDs not installed, RBAC, a conflict); the message names the request and the API server's answer: apply deploy/crds and the RBAC of deploy/base/tenant-flow-rbac.yaml.",
  },
  ERR_TENANT_FLOW_TIMEOUT: {
    area: 'issuer',
    doc: 'tenant apply --to-cluster: the issuer did not answer the Tenant within --timeout: is `issuer serve --reconcile-tenants` running for that namespace?',
  },
  ERR_TENANT_FLOW_NO_IDENTITY: {
    area: 'issuer',
    doc: 'identity import --from-cluster: the Tenant has no Identity (not answered yet, or refused: its Ready condition says why): run tenant apply --to-cluster.',
  },

  // token-request: the plugin (TokenRequest and Secret Reader modes) and token sync
  ERR_TOKEN_REQUEST_SETTINGS: {
    area: 'token-request',
    doc: 'A bad namespace or service account name, expirationSeconds out of bounds, bad audiences or boundObjectRef; path = the config key or flag.',
  },
  ERR_TOKEN_REQUEST_USAGE: {
    area: 'token-request',
    doc: 'No spec.cluster (provideClusterInfo off), unknown --mode/--bootstrap, missing bootstrap flags, a bad --timeout.',
  },
  ERR_TOKEN_REQUEST_UNAUTHORIZED: {
    area: 'token-request',
    doc: 'The member API server answered 401: the bootstrap credential was rejected.',
  },
  ERR_TOKEN_REQUEST_FORBIDDEN: {
    area: 'token-request',
    doc: 'The member API server answered 403: the hint names the missing create on serviceaccounts/token.',
  },
  ERR_TOKEN_REQUEST_NOT_FOUND: {
    area: 'token-request',
    doc: 'The member API server answered 404: the service account does not exist.',
  },
  ERR_TOKEN_REQUEST_REJECTED: {
    area: 'token-request',
    doc: 'Any other HTTP failure of the TokenRequest (after retries): read the Status message.',
  },
  ERR_TOKEN_REQUEST_RESPONSE_INVALID: {
    area: 'token-request',
    doc: 'The answer is not a TokenRequest, has no token, or a bad or past expirationTimestamp.',
  },
  ERR_TOKEN_REQUEST_BOOTSTRAP: {
    area: 'token-request',
    doc: 'The bootstrap identity is unusable: a bootstrap kubeconfig user without a credential, or (--bootstrap tenant-cert) the tenant-cert identity could not be obtained (its own error is on the line before).',
  },
  ERR_TOKEN_REQUEST_BOOTSTRAP_SERVER: {
    area: 'token-request',
    doc: 'a bootstrap kubeconfig or in-cluster credential would go to another API server than its own (the ClusterProfile names another server), or its own server is not https: it is never sent.',
  },
  ERR_SECRET_READER_CONFIG: {
    area: 'token-request',
    doc: 'Secret Reader mode: spec.cluster.config is missing or not an object, or clusterName / the Secret namespace is not a valid name.',
  },
  ERR_SECRET_READER_GET: {
    area: 'token-request',
    doc: 'Secret Reader mode: the hub refused or failed to return the Secret.',
  },
  ERR_SECRET_READER_NO_TOKEN: { area: 'token-request', doc: 'Secret Reader mode: the Secret has no token key.' },
  ERR_SECRET_READER_NOT_A_TOKEN: {
    area: 'token-request',
    doc: "Secret Reader mode: the Secret's token key holds something other than a bearer token (RFC 6750 characters); the value is never printed.",
  },
  ERR_TOKEN_SYNC_USAGE: { area: 'token-request', doc: 'token sync: a bad --interval.' },
  ERR_TOKEN_SYNC_HUB: {
    area: 'token-request',
    doc: 'token sync: the hub refused listing ClusterProfiles or reading/writing a Secret.',
  },
  ERR_TOKEN_SYNC_BOOTSTRAP: {
    area: 'token-request',
    doc: 'token sync: the selected exec plugin returned neither a client certificate nor a token.',
  },

  // oidc: the OpenID Connect plugin
  ERR_OIDC_CONFIG: {
    area: 'oidc',
    doc: 'A missing or bad spec.cluster.config key, flag or HTTPS_PROXY (path names it), or a private key that does not fit --private-key-alg.',
  },
  ERR_OIDC_FILE: {
    area: 'oidc',
    doc: 'The client secret, private key or subject-token file is unreadable, empty or not a PEM key; path = the flag.',
  },
  ERR_OIDC_ISSUER_UNREACHABLE: {
    area: 'oidc',
    doc: 'Connection refused, DNS, timeout or a TLS failure talking to the issuer: check issuerURL; set issuerCA for a private CA.',
  },
  ERR_OIDC_DISCOVERY: {
    area: 'oidc',
    doc: 'The discovery document or JWKS is missing, not JSON or lacks an https endpoint, or the issuer lacks the grant endpoint or S256.',
  },
  ERR_OIDC_CLIENT_AUTH_UNSUPPORTED: {
    area: 'oidc',
    doc: 'The issuer does not offer that client authentication method: the message names those it does (token_endpoint_auth_methods_supported).',
  },
  ERR_OIDC_ISSUER_MISMATCH: {
    area: 'oidc',
    doc: 'The discovery issuer differs from issuerURL: use the exact issuer identifier.',
  },
  ERR_OIDC_GRANT: {
    area: 'oidc',
    doc: "The token endpoint refused the grant: the OP's error and error_description are in the message, with a hint.",
  },
  ERR_OIDC_REFRESH_FAILED: {
    area: 'oidc',
    doc: 'The refresh token was refused and there is no terminal for a new login: run once from a terminal.',
  },
  ERR_OIDC_INTERACTIVE_REQUIRED: {
    area: 'oidc',
    doc: 'A login is needed but spec.interactive is false: run once from a terminal.',
  },
  ERR_OIDC_LOGIN_FAILED: {
    area: 'oidc',
    doc: 'Device code expired (the message says whose deadline) or denied, an error or wrong-state redirect, no login within --login-timeout, the loopback port taken.',
  },
  ERR_OIDC_TOKEN_INVALID: {
    area: 'oidc',
    doc: 'A returned token failed validation (signature, algorithm, iss, aud, azp, exp, nbf, nonce, not a JWT): check the OP and issuerURL.',
  },

  // cli: the clusterprofile command
  ERR_USAGE: {
    area: 'cli',
    doc: 'A bad command line (unknown option or command, missing or conflicting flags): see clusterprofile <command> --help.',
  },
  ERR_PROFILE_READ: { area: 'cli', doc: 'The --profile file cannot be read: check the path.' },
  ERR_PROFILE_PARSE: { area: 'cli', doc: 'The --profile file is not YAML or JSON, or not one object.' },
  ERR_PROFILE_NOT_FOUND: {
    area: 'cli',
    doc: 'The hub answered 404 for the ClusterProfile: check its name and namespace.',
  },
  ERR_HUB_CONFIG: {
    area: 'cli',
    doc: 'No usable hub kubeconfig (KUBECONFIG missing or unreadable, no current cluster): point KUBECONFIG at the hub, or pass --profile FILE.',
  },
  ERR_HUB_REQUEST: {
    area: 'cli',
    doc: 'Any other hub failure: the HTTP status and Status message, or the network error.',
  },
};
