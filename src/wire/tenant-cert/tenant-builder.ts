/**
 * The Tenant document and its CSR, as the door's {@link import('../../providers/tenant-cert/index.js').loadTenantBuilder} hands them out
 * (`clusterprofile tenant generate`). Heavy: the CSR is built with @peculiar/x509.
 */
export { buildTenant } from './documents.js';
export type { TenantInput } from './documents.js';
export { buildCsr } from './csr.js';
export type { BuiltCsr, CsrSubject } from './csr.js';
