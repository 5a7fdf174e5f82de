/**
 * The door of the tenant-cert provider: the only module of this folder that code outside it imports (the CLI,
 * another provider). It holds the client side only; the issuer (the provider side) is a room of its own, src/issuer/,
 * which the CLI loads itself. What the door exports statically is light — the credential provider, the key file, the
 * cluster-ID rule and protocol constants, cluster keys (node:crypto) — so importing it costs a command or
 * token-request's `--bootstrap tenant-cert` little. The heavy sides come through async loaders, each a separate chunk
 * in a bundle:
 *
 * - {@link loadIdentityImport}: Identity parsing and storage, the certificate checks (`clusterprofile identity import`);
 * - {@link loadClusterFlow}: the declarative flow's consumer side (`tenant apply`, `identity import --from-cluster`);
 * - {@link loadTenantBuilder}: Tenant documents and their CSRs, from the shared wire room (`tenant generate`).
 *
 * A plugin's cache hit loads none of this: the binary starts from ./main.ts.
 */

// consumer: the credential provider and its key file
export { tenantCertFlags, tenantCertProvider } from './provider.js';
export type { TenantCertFlagSpecs, TenantCertPluginSettings, TenantCertState } from './provider.js';
export { defaultIdentityDir, identityFile, readKeyFile } from './settings.js';

// wire format: cluster IDs, protocol constants, cluster keys
export {
  API_VERSION,
  CLUSTER_ID_MAX_LENGTH,
  CLUSTER_ID_PATTERN,
  CLUSTER_ID_RULE,
  LIQO_API_VERSION,
  checkClusterId,
  isClusterId,
} from '../../wire/tenant-cert/protocol.js';
export type { LiqoTenantDocument, TenantDocument } from '../../wire/tenant-cert/protocol.js';
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
} from '../../wire/tenant-cert/keys.js';
export type { GeneratedKeyPair, KeyAlgorithm } from '../../wire/tenant-cert/keys.js';

// the heavy sides
/** Identity import: parsing and storing Identities, checking their certificates. */
export const loadIdentityImport = (): Promise<typeof import('./consumer/index.js')> => import('./consumer/index.js');
export type { CertificateExpectations, CheckedCertificate, ParsedIdentity } from './consumer/index.js';
/** The declarative flow, consumer side: Tenant and Identity resources on the provider cluster. */
export const loadClusterFlow = (): Promise<typeof import('./consumer/cluster-flow.js')> =>
  import('./consumer/cluster-flow.js');
export type { AppliedTenant } from './consumer/cluster-flow.js';
/** Tenant documents and their CSRs. */
export const loadTenantBuilder = (): Promise<typeof import('../../wire/tenant-cert/tenant-builder.js')> =>
  import('../../wire/tenant-cert/tenant-builder.js');
export type { BuiltCsr, CsrSubject, TenantInput } from '../../wire/tenant-cert/tenant-builder.js';
