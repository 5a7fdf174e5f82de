/**
 * Imported Identities: the manual flow's last step. `clusterprofile identity import` validates an Identity (ours,
 * `credentials.clusterprofile.io/v1alpha1`, or Liqo's `authentication.liqo.io/v1beta1`, YAML or JSON) and stores it
 * at `<identity dir>/<consumer ID>/<provider ID>.yaml`; the plugin serves its certificate while it is valid, before
 * (and instead of) asking the issuer.
 *
 * Loaded on a cache miss only (YAML parser).
 */
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { parseDocument } from '../../../base/document.js';
import { writeFileAtomic } from '../../../base/private-files/atomic-write.js';
import { checkPrivateDirectory, readPrivateFile, type PrivacyProblem } from '../../../base/private-files/privacy.js';
import { CredentialsError, isCredentialsError } from '../../../base/errors.js';
import { readIdentity, type ReceivedIdentity } from '../../../wire/tenant-cert/documents.js';
import { identityFile } from '../settings.js';
import { isClusterId } from '../../../wire/tenant-cert/cluster-id.js';

export { identityFile };
import { commonName } from './certificate.js';

/** An Identity reduced to what a consumer uses. */
export interface ParsedIdentity {
  format: 'clusterprofile' | 'liqo';
  /** `spec.clusterID`: the provider cluster. */
  providerClusterID: string;
  /** Ours: `spec.consumerClusterID`; Liqo: from `spec.namespace` (`liqo-tenant-<id>`) when present; else the certificate's CN. */
  consumerClusterID: string;
  /** PEM of the issued certificate (leaf first). */
  certificatePem: string;
  /** PEM of the API server CA, when the Identity carries one. */
  caPem?: string;
  apiServer?: string;
  proxyURL?: string;
}

function invalid(message: string, path: string, source: string): CredentialsError {
  return new CredentialsError('ERR_TENANT_CERT_IDENTITY_INVALID', `${source}: ${message}`, { path });
}

/**
 * Parses an Identity document (YAML or JSON, ours or Liqo's) with the core's reader (schema `tenant-cert-identity`).
 * `source` names it in messages (a file name). Checks the shape and that the certificate parses; the caller checks
 * that it is ours ({@link checkCertificate}). Errors keep the core's codes (ERR_TENANT_INVALID_DOCUMENT,
 * ERR_TENANT_BAD_BASE64, ERR_TENANT_BAD_PEM) with the JSON path of the bad field.
 */
export function parseIdentity(text: string, source: string): ParsedIdentity {
  const value = parseDocument(text, {
    source,
    code: 'ERR_TENANT_CERT_IDENTITY_INVALID',
    message: `${source}: not YAML/JSON`,
  });
  const doc = value as { spec?: { type?: unknown } } | null;
  if (doc?.spec?.type !== undefined && doc.spec.type !== 'ControlPlane') {
    throw invalid(
      `spec.type is ${JSON.stringify(doc.spec.type)}: only ControlPlane identities carry a client certificate for us`,
      '$.spec.type',
      source,
    );
  }
  let received: ReceivedIdentity;
  try {
    received = readIdentity(value);
  } catch (error) {
    if (isCredentialsError(error)) {
      throw new CredentialsError(error.code, `${source}: ${error.message}`, {
        ...(error.path === undefined ? {} : { path: error.path }),
        ...(error.hint === undefined ? {} : { hint: error.hint }),
        cause: error,
      });
    }
    throw error;
  }
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(received.certificatePem);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_IDENTITY_INVALID',
      `${source}: spec.authParams.signedCRT cannot be parsed: ${(cause as Error).message}`,
      { path: '$.spec.authParams.signedCRT', cause },
    );
  }
  const consumer = received.consumerClusterID ?? commonName(certificate);
  if (!isClusterId(consumer)) {
    throw invalid(
      `the consumer cluster ID ${JSON.stringify(consumer)} is not a cluster ID`,
      '$.spec.consumerClusterID',
      source,
    );
  }
  return {
    format: received.flavour,
    providerClusterID: received.providerClusterID,
    consumerClusterID: consumer,
    certificatePem: received.certificatePem,
    ...(received.apiServerCaPem === undefined ? {} : { caPem: received.apiServerCaPem }),
    ...(received.apiServer === undefined ? {} : { apiServer: received.apiServer }),
    ...(received.proxyURL === undefined ? {} : { proxyURL: received.proxyURL }),
  };
}

/** Stores `text` atomically (temp file + rename) with mode 0600 in a 0700 directory. Returns the file. */
export async function storeIdentity(identityDir: string, identity: ParsedIdentity, text: string): Promise<string> {
  const file = identityFile(identityDir, identity.consumerClusterID, identity.providerClusterID);
  const dir = join(identityDir, identity.consumerClusterID);
  const problem = checkPrivateDirectory(dir, { create: true });
  if (problem !== undefined) {
    throw storeError(problem, dir, 'directory');
  }
  try {
    await writeFileAtomic(file, text, 0o600);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_IDENTITY_STORE',
      `cannot store the Identity: ${(cause as Error).message}`,
      {
        path: file,
        cause,
      },
    );
  }
  return file;
}

/** The imported Identity for (consumer, provider), or undefined when none was imported. */
export async function loadImportedIdentity(
  identityDir: string,
  consumerClusterID: string,
  providerClusterID: string,
): Promise<{ file: string; identity: ParsedIdentity } | undefined> {
  const file = identityFile(identityDir, consumerClusterID, providerClusterID);
  const read = readPrivateFile(file);
  if ('problem' in read) {
    if (read.problem.kind === 'missing') {
      return undefined;
    }
    throw storeError(read.problem, file, 'file');
  }
  const identity = parseIdentity(read.text, file);
  if (identity.providerClusterID !== providerClusterID || identity.consumerClusterID !== consumerClusterID) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_IDENTITY_INVALID',
      `${file} is the Identity of ${identity.providerClusterID} for ${identity.consumerClusterID}, not of ${providerClusterID} for ${consumerClusterID}`,
      { path: file, hint: 'import it again with clusterprofile identity import' },
    );
  }
  return { file, identity };
}

/** The store's error for a directory or Identity file that is not private (or cannot be made or read). */
function storeError(problem: PrivacyProblem, path: string, what: 'file' | 'directory'): CredentialsError {
  const subject = what === 'file' ? 'the imported Identity' : `the Identity directory ${path}`;
  const fail = (message: string, hint?: string, cause?: unknown) =>
    new CredentialsError('ERR_TENANT_CERT_IDENTITY_STORE', message, {
      path,
      ...(hint === undefined ? {} : { hint }),
      ...(cause === undefined ? {} : { cause }),
    });
  switch (problem.kind) {
    case 'mode':
      return fail(
        `${subject} is accessible by others (mode ${problem.mode.toString(8).padStart(4, '0')}); refusing to use it`,
        `chmod ${what === 'file' ? '600' : '700'} ${path}`,
      );
    case 'owner':
      return fail(
        `${subject} is owned by uid ${problem.uid}, not by you (uid ${problem.user}); refusing to use it`,
        `use an --identity-dir of your own, or chown ${problem.user} ${path}`,
      );
    case 'type':
      return fail(
        `${subject} is ${problem.found === 'directory' ? 'a directory' : problem.found === 'file' ? 'a file' : 'not a regular file'}`,
        `remove it and import the Identity again`,
      );
    case 'io':
      return fail(
        `cannot ${problem.operation} ${subject}: ${(problem.cause as Error).message}`,
        undefined,
        problem.cause,
      );
    default:
      return fail(`cannot use ${subject}: ${problem.kind}`);
  }
}
