/**
 * Who signs an accepted CSR: the narrow interface the issuer calls once every check passed. Two implementations:
 * the embedded CA of the data dir (./embedded-signer.ts, the default) and the Kubernetes CSR API
 * (./kubernetes-signer.ts).
 */
import type { ParsedCsr } from '../../wire/tenant-cert/csr.js';
import type { GrantedSubject } from '../../wire/tenant-cert/protocol.js';

export interface SignRequest {
  consumerClusterID: string;
  csr: ParsedCsr;
  /** What the certificate must say (the embedded CA writes it; the Kubernetes signer copies the CSR, checked equal). */
  subject: GrantedSubject;
  notBefore: Date;
  notAfter: Date;
}

export interface Signer {
  readonly name: 'embedded' | 'kubernetes';
  /** Subject O values must equal the granted groups exactly (the signer copies the CSR's subject). */
  readonly copiesCsrSubject: boolean;
  /** Returns the certificate PEM. Throws ERR_ISSUER_SIGNER_* on failure. */
  sign(request: SignRequest, options?: { signal?: AbortSignal }): Promise<string>;
  close?(): Promise<void>;
}
