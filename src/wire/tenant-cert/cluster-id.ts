/**
 * Cluster IDs, part of the tenant-cert wire format (re-exported by ./protocol.ts). Kept apart from the rest of it so
 * the plugin's cache-hit path, which checks `--cluster-id` on every run, loads only this.
 */
import { CredentialsError } from '../../base/errors.js';

/**
 * Cluster IDs — the one rule for the consumer (plugin, `identity import`, `tenant generate`), the issuer (`issuer
 * serve/trust/untrust`, the trust store, `issuer.json`) and the documents between them (schemas/tenant-cert-*.json,
 * issuer-trust-record; a unit test holds them to these constants): a DNS-1123 label, i.e. lower-case letters, digits
 * and '-', starting and ending with a letter or digit, at most 63 characters.
 *
 * Why a label and not a 253-character DNS-1123 subdomain: the issuer certifies the consumer's ID as the certificate's
 * CN, and X.509 bounds a CN at 64 characters (RFC 5280, ub-common-name), so a longer ID could be trusted but never
 * correctly certified; Liqo, whose documents the issuer accepts, checks its cluster IDs as DNS-1123 labels too (liqoctl
 * `--cluster-id`: IsDNS1123Label; the ForeignCluster CRD's pattern has no dots); and this pattern never allowed dots,
 * so the IDs were labels in all but length already. Every ID an issuer trusts is one its plugin accepts.
 */
export const CLUSTER_ID_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const CLUSTER_ID_MAX_LENGTH = 63;
/** {@link CLUSTER_ID_PATTERN} and {@link CLUSTER_ID_MAX_LENGTH} in words, for messages. */
export const CLUSTER_ID_RULE =
  "lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters";

/** True when `id` is a cluster ID (which also makes it a safe file name). */
export function isClusterId(id: unknown): id is string {
  return typeof id === 'string' && id.length <= CLUSTER_ID_MAX_LENGTH && CLUSTER_ID_PATTERN.test(id);
}

/**
 * Returns `id` if it is a cluster ID; else throws `ERR_TENANT_CERT_FLAG` with `flag` as path — the same code from the
 * plugin's `--cluster-id` and from every issuer and tenant command.
 */
export function checkClusterId(id: string, flag: string): string {
  if (!isClusterId(id)) {
    throw new CredentialsError<'ERR_TENANT_CERT_FLAG'>(
      'ERR_TENANT_CERT_FLAG',
      `${flag} ${JSON.stringify(id)} is not a cluster ID (${CLUSTER_ID_RULE})`,
      { path: flag },
    );
  }
  return id;
}
