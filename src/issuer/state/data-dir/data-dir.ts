/**
 * The issuer's data dir (0700). Made on first use; every file is written atomically, keys with mode 0600:
 * ```text
 * serving-ca.crt   the CA to trust for HTTPS to the issuer (hand it to consumers: issuerCA)
 * serving-ca.key
 * serving.crt      the HTTPS certificate (SANs from --listen and --san; re-issued when they change or it nears expiry)
 * serving.key
 * client-ca.crt    the CA of the certificates the embedded signer issues (an API server's --client-ca-file)
 * client-ca.key
 * trusted/<id>.json  the consumers the admin trusts (./trust-files.ts)
 * nonces.journal   outstanding and spent nonces (./nonce-journal.ts)
 * issuer.lock      held by the process using nonces.journal
 * ```
 */
import { join } from 'node:path';
import { CredentialsError } from '../../../base/errors.js';
import { decodeCertificatesPem, decodePrivateKeyPem } from '../../../base/pem-file.js';
import { createCertificateAuthority, loadCertificateAuthority, type CertificateAuthority } from '../../certificates.js';
import { CA_LIFETIME_MS, caCommonName, servingFrom, type ServingMaterial } from '../issuer-cas.js';
import { ensurePrivateDir, readOptional, writeFileAtomic } from './files.js';

export const DATA_FILES = {
  servingCa: 'serving-ca.crt',
  servingCaKey: 'serving-ca.key',
  serving: 'serving.crt',
  servingKey: 'serving.key',
  clientCa: 'client-ca.crt',
  clientCaKey: 'client-ca.key',
  nonces: 'nonces.journal',
} as const;

async function loadOrCreateCa(
  dir: string,
  cert: string,
  key: string,
  commonName: string,
  now: Date,
): Promise<CertificateAuthority> {
  const certPath = join(dir, cert);
  const keyPath = join(dir, key);
  let certificatePem = await readOptional(certPath);
  let keyPem = await readOptional(keyPath);
  if (certificatePem === undefined || keyPem === undefined) {
    if (certificatePem !== undefined || keyPem !== undefined) {
      throw new CredentialsError('ERR_ISSUER_DATA_DIR', `only one of ${cert} and ${key} exists in ${dir}`, {
        path: certPath,
        hint: 'restore the missing file from a backup; removing both makes a new CA that nothing trusts yet',
      });
    }
    const created = createCertificateAuthority(commonName, now, CA_LIFETIME_MS);
    // Key first: a crash between the two leaves a key without certificate, reported above rather than silently replaced.
    await writeFileAtomic(keyPath, created.keyPem, 0o600);
    await writeFileAtomic(certPath, created.certificatePem, 0o644);
    certificatePem = created.certificatePem;
    keyPem = created.keyPem;
  }
  const hint = 'restore both files of the pair from one backup';
  // Each file decoded by the one key and certificate reader first: a refusal names the file and what it should hold.
  decodeCertificatesPem(certificatePem, { file: certPath, code: 'ERR_ISSUER_DATA_DIR', hint });
  const privateKey = decodePrivateKeyPem(keyPem, { file: keyPath, code: 'ERR_ISSUER_DATA_DIR', hint });
  try {
    return loadCertificateAuthority(certificatePem, privateKey);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_ISSUER_DATA_DIR',
      `${certPath} or ${keyPath} cannot be read: ${(cause as Error).message}`,
      {
        path: certPath,
        hint,
        cause,
      },
    );
  }
}

export interface DataDir {
  dir: string;
  servingCa: CertificateAuthority;
  clientCa: CertificateAuthority;
  noncesFile: string;
}

/** Opens (creating on first use) the data dir and its two CAs. */
export async function openDataDir(dir: string, providerClusterID: string, now: Date): Promise<DataDir> {
  await ensurePrivateDir(dir);
  const servingCa = await loadOrCreateCa(
    dir,
    DATA_FILES.servingCa,
    DATA_FILES.servingCaKey,
    caCommonName('serving', providerClusterID),
    now,
  );
  const clientCa = await loadOrCreateCa(
    dir,
    DATA_FILES.clientCa,
    DATA_FILES.clientCaKey,
    caCommonName('client', providerClusterID),
    now,
  );
  return { dir, servingCa, clientCa, noncesFile: join(dir, DATA_FILES.nonces) };
}

/** The HTTPS key and certificate, re-issued from the serving CA when missing, lacking a SAN, or within 30 days of expiry. */
export async function servingMaterial(data: DataDir, sans: readonly string[], now: Date): Promise<ServingMaterial> {
  const certPath = join(data.dir, DATA_FILES.serving);
  const keyPath = join(data.dir, DATA_FILES.servingKey);
  const { fresh, ...material } = servingFrom(
    data.servingCa,
    { certificatePem: await readOptional(certPath), keyPem: await readOptional(keyPath) },
    sans,
    now,
  );
  if (fresh) {
    await writeFileAtomic(keyPath, material.keyPem, 0o600);
    await writeFileAtomic(certPath, material.certificatePem, 0o644);
  }
  return material;
}
