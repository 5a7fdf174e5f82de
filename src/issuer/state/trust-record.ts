/**
 * A trusted consumer as both state backends store it (schema `issuer-trust-record`): the data dir's
 * `trusted/<clusterID>.json`, or the Kubernetes state's ConfigMap `record.json`.
 */
import type { KeyObject } from 'node:crypto';
import { parseDocument } from '../../base/document.js';
import { CredentialsError } from '../../base/errors.js';
import { assertDocument } from '../../schemas/index.js';
import { parsePublicKey, publicKeyPem } from '../../wire/tenant-cert/keys.js';

export interface TrustRecord {
  clusterID: string;
  /** PEM SPKI. */
  publicKey: string;
  /** Groups for this consumer, added to the issuer-wide policy. */
  groups: string[];
  addedAt: string;
}

export interface TrustedConsumer {
  clusterID: string;
  publicKey: KeyObject;
  groups: string[];
  addedAt: string;
}

/** A trust record as both state backends store it (a file, or a ConfigMap's `record.json`). */
export function trustRecordText(
  clusterID: string,
  publicKey: KeyObject,
  groups: readonly string[],
  now: Date,
): { record: TrustRecord; text: string } {
  const record: TrustRecord = {
    clusterID,
    publicKey: publicKeyPem(publicKey),
    groups: [...groups],
    addedAt: now.toISOString(),
  };
  return { record, text: `${JSON.stringify(record, null, 2)}\n` };
}

/**
 * A stored trust record read back: JSON, the `issuer-trust-record` schema, the cluster ID it is stored under, a usable
 * public key; anything else is ERR_ISSUER_TRUST_RECORD naming `where` (never "trusted").
 */
export function parseTrustRecord(text: string, clusterID: string, where: string): TrustedConsumer {
  const document = parseDocument(text, {
    source: where,
    code: 'ERR_ISSUER_TRUST_RECORD',
    format: 'json',
    message: `the trust record ${where} is not JSON`,
  });
  const record = assertDocument<TrustRecord>('issuer-trust-record', document, {
    code: 'ERR_ISSUER_TRUST_RECORD',
    what: `the trust record ${where}`,
  });
  if (record.clusterID !== clusterID) {
    throw new CredentialsError('ERR_ISSUER_TRUST_RECORD', `the trust record ${where} names ${record.clusterID}`, {
      path: where,
    });
  }
  let publicKey: KeyObject;
  try {
    publicKey = parsePublicKey(record.publicKey, where);
  } catch (cause) {
    // The record's fault, not the client's: never reported with the client-facing ERR_TENANT_* key codes.
    throw new CredentialsError(
      'ERR_ISSUER_TRUST_RECORD',
      `the trust record ${where} holds no usable public key: ${(cause as Error).message}`,
      { path: where, cause },
    );
  }
  return { clusterID, publicKey, groups: record.groups, addedAt: record.addedAt };
}
