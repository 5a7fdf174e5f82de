/**
 * What `clusterprofile identity import` needs from the consumer side, as the door's
 * {@link import('../index.js').loadIdentityImport} hands it out: Identity parsing (YAML or JSON) and storage, and the
 * certificate checks (node:crypto X.509).
 */
export { checkCertificate } from './certificate.js';
export type { CertificateExpectations, CheckedCertificate } from './certificate.js';
export { parseIdentity, storeIdentity } from './identity.js';
export type { ParsedIdentity } from './identity.js';
