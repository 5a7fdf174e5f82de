/**
 * The door of the tenant-cert provider: the only module of this folder that code outside it imports (the CLI,
 * another provider). Three sides:
 *
 * - consumer: the credential provider ({@link tenantCertProvider}, for `runPlugin` / `obtainCredential`) and what
 *   `clusterprofile identity import` needs (Identity parsing and storage, the key file, the certificate checks);
 * - issuer: opening a data dir, serving, the trust store, groups policy (`clusterprofile issuer`, `tenant accept`);
 * - wire format: the cluster-ID rule, the documents, CSRs and cluster keys both sides share (`clusterprofile keygen`,
 *   `tenant generate`).
 *
 * Heavy modules (the issuer's HTTPS server, X.509) are re-exported, not loaded on a plugin's cache hit: the plugin
 * binary starts from ./main.ts, and bundles keep only what their entry uses.
 */

// consumer: the credential provider
export { tenantCertFlags, tenantCertProvider } from './provider.js';
export type { TenantCertFlagSpecs, TenantCertPluginSettings, TenantCertState } from './provider.js';

// consumer: imported Identities (clusterprofile identity import)
export { checkCertificate } from './consumer/certificate.js';
export type { CertificateExpectations, CheckedCertificate } from './consumer/certificate.js';
export { parseIdentity, storeIdentity } from './consumer/identity.js';
export type { ParsedIdentity } from './consumer/identity.js';
export { defaultIdentityDir, identityFile, readKeyFile } from './settings.js';

// issuer
export { DATA_FILES, servingMaterial } from './issuer/data-dir.js';
export { checkGroups } from './issuer/policy.js';
export { startIssuerServer } from './issuer/server.js';
export type { IssuerServerOptions, RunningIssuer } from './issuer/server.js';
export { configError, openIssuer, parseListen } from './issuer/setup.js';
export type { IssuerSettings, OpenIssuer } from './issuer/setup.js';
export { TrustStore } from './issuer/trust.js';
export type { TrustRecord, TrustedConsumer } from './issuer/trust.js';

// wire format: cluster IDs, documents, CSRs, cluster keys
export { API_VERSION, CLUSTER_ID_MAX_LENGTH, CLUSTER_ID_PATTERN, CLUSTER_ID_RULE, LIQO_API_VERSION, checkClusterId, isClusterId } from './wire/protocol.js';
export type { LiqoTenantDocument, TenantDocument } from './wire/protocol.js';
export { buildTenant } from './wire/documents.js';
export type { TenantInput } from './wire/documents.js';
export { buildCsr } from './wire/csr.js';
export type { BuiltCsr, CsrSubject } from './wire/csr.js';
export {
  KEY_ALGORITHMS,
  encodeBase64,
  generateClusterKeyPair,
  keyAlgorithm,
  parsePrivateKeyPem,
  parsePublicKey,
  publicKeyPem,
  signBytes,
  spkiDer,
} from './wire/keys.js';
export type { GeneratedKeyPair, KeyAlgorithm } from './wire/keys.js';
