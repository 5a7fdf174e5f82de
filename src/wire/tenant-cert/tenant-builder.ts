/**
 * The Tenant document and its CSR, as the tenant-cert door's `loadTenantBuilder()` (src/providers/tenant-cert/index.ts)
 * hands them out (`clusterprofile tenant generate`): a chunk of its own, with the schemas' validators; the CSR is built
 * by hand (./der.ts), without @peculiar/x509.
 */
export { buildTenant } from './documents.js';
export type { TenantInput } from './documents.js';
export { buildCsr } from './csr.js';
export type { BuiltCsr, CsrSubject } from './csr.js';
