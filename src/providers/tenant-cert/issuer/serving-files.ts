/**
 * The HTTPS certificate and key from files (`--tls-cert-file`, `--tls-key-file`): in a cluster, the `tls.crt`/`tls.key` of a
 * kubernetes.io/tls Secret (cert-manager's, or one made by hand), instead of the data dir's own serving CA.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CredentialsError } from '../../../core/errors.js';
import type { ServingMaterial } from './data-dir.js';

function tlsError(message: string, path: string, cause?: unknown): CredentialsError {
  return new CredentialsError('ERR_ISSUER_CONFIG', message, { path, hint: 'give the PEM certificate (chain) and its private key, e.g. tls.crt and tls.key of a kubernetes.io/tls Secret', ...(cause === undefined ? {} : { cause }) });
}

/** Reads and checks the pair: a PEM certificate (leaf first) that is valid now and the private key that matches it. */
export async function servingMaterialFromFiles(certFile: string, keyFile: string, cwd: string, now: Date): Promise<ServingMaterial> {
  const certPath = resolve(cwd, certFile);
  const keyPath = resolve(cwd, keyFile);
  const certificatePem = await readFile(certPath, 'utf8').catch((cause: unknown) => {
    throw tlsError(`cannot read --tls-cert-file ${certPath}: ${(cause as Error).message}`, '--tls-cert-file', cause);
  });
  const keyPem = await readFile(keyPath, 'utf8').catch((cause: unknown) => {
    throw tlsError(`cannot read --tls-key-file ${keyPath}: ${(cause as Error).message}`, '--tls-key-file', cause);
  });
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certificatePem);
  } catch (cause) {
    throw tlsError(`--tls-cert-file ${certPath} holds no PEM certificate`, '--tls-cert-file', cause);
  }
  let matches: boolean;
  try {
    matches = leaf.checkPrivateKey(createPrivateKey(keyPem));
  } catch (cause) {
    // The key's text is never quoted.
    throw tlsError(`--tls-key-file ${keyPath} holds no PEM private key`, '--tls-key-file', cause);
  }
  if (!matches) {
    throw tlsError(`--tls-key-file ${keyPath} is not the key of the certificate in ${certPath}`, '--tls-key-file');
  }
  if (Date.parse(leaf.validTo) <= now.getTime() || Date.parse(leaf.validFrom) > now.getTime()) {
    throw tlsError(`the certificate in ${certPath} is not valid now (${leaf.validFrom} .. ${leaf.validTo})`, '--tls-cert-file');
  }
  return { certificatePem, keyPem, caPem: certificatePem };
}
