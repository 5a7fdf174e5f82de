/** The default signer: the client CA in the data dir signs what the issuer decided (see ../certificates.ts). */
import { issueClientCertificate, type CertificateAuthority } from '../certificates.js';
import type { SignRequest, Signer } from './signer.js';
import { spkiDer } from '../../wire/tenant-cert/keys.js';

export function embeddedSigner(ca: CertificateAuthority): Signer {
  return {
    name: 'embedded',
    copiesCsrSubject: false,
    async sign(request: SignRequest): Promise<string> {
      return issueClientCertificate(ca, {
        spkiDer: spkiDer(request.csr.publicKey),
        subject: request.subject,
        notBefore: request.notBefore,
        notAfter: request.notAfter,
      }).certificatePem;
    },
  };
}
