/**
 * The tenant-cert credential provider: short-lived client certificates for a member (provider) cluster, obtained
 * from its tenant-cert issuer through the hardened Tenant/Identity handshake — or served from an Identity imported by
 * `clusterprofile identity import`. The runtime (../../plugin) does input, cache, lock and output; this module is
 * light (settings only); the handshake code is imported on a cache miss.
 *
 * @example kubeconfig user
 * ```yaml
 * exec:
 *   apiVersion: client.authentication.k8s.io/v1
 *   command: clusterprofile-tenant-cert
 *   args: [--cluster-id, consumer-1, --key-file, /etc/fleet/consumer.key]
 *   provideClusterInfo: true
 *   interactiveMode: Never
 * ```
 * with the cluster's `client.authentication.k8s.io/exec` extension holding `{issuerURL, issuerCA, providerClusterID}`.
 */
import type { CredentialProvider } from '../../plugin/provider.js';
import { CredentialsError } from '../../base/errors.js';
import { tenantCertSettings, type TenantCertPluginSettings, type TenantCertState } from './settings.js';

export type { TenantCertPluginSettings, TenantCertState };

export const tenantCertFlags = {
  'cluster-id': {
    type: 'string',
    required: true,
    placeholder: 'ID',
    description: "this (the consumer) cluster's ID: the certificate's CN",
  },
  'key-file': {
    type: 'string',
    required: true,
    placeholder: 'FILE',
    description: "this cluster's private key, PKCS#8 PEM, mode 0600 (clusterprofile keygen)",
  },
  'identity-dir': {
    type: 'string',
    placeholder: 'DIR',
    description: 'where clusterprofile identity import stores Identities (default ~/.kube/clusterprofile/identities)',
  },
  timeout: {
    type: 'string',
    placeholder: 'SECONDS',
    description: 'overall deadline for the issuer handshake, retries included (default 30)',
  },
} as const;

export type TenantCertFlagSpecs = typeof tenantCertFlags;

function parseTimeout(value: string | undefined): number {
  if (value === undefined) {
    return 30_000;
  }
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 600) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_FLAG',
      `--timeout ${JSON.stringify(value)} is not a number of seconds in (0, 600]`,
      {
        path: '--timeout',
      },
    );
  }
  return Math.round(seconds * 1000);
}

/** The provider; `run` in ./main.ts wraps it with the runtime. */
export const tenantCertProvider: CredentialProvider<TenantCertFlagSpecs, TenantCertPluginSettings, TenantCertState> = {
  name: 'tenant-cert',
  description: "short-lived client certificates from a member cluster's tenant-cert issuer (Tenant/Identity handshake)",
  flags: tenantCertFlags,
  minRemainingSeconds: 60,
  // Longer than one handshake may take (`--timeout`, 30 s by default, plus start-up on a loaded machine): many parallel
  // cold starts (a controller fanning out, 100 kubectl runs) then end with one handshake instead of waiters giving
  // up while the holder is still talking to the issuer.
  lockTimeoutMs: 180_000,
  // The certificate's own end, stored when the entry was written: an entry whose certificate has expired is never
  // served, whatever its expirationTimestamp says.
  stateExpiresAt(state) {
    const notAfter = typeof state?.notAfter === 'string' ? Date.parse(state.notAfter) : Number.NaN;
    return Number.isNaN(notAfter) ? undefined : notAfter;
  },
  settings({ flags, input, env }) {
    return {
      ...tenantCertSettings(flags, input.spec.cluster?.config, env, process.cwd()),
      timeoutMs: parseTimeout(flags.timeout),
    };
  },
  cacheKey(settings) {
    // Everything that decides which certificate we get; the key by digest, never the key itself.
    return {
      clusterID: settings.clusterID,
      providerClusterID: settings.providerClusterID,
      issuerURL: settings.issuerURL ?? null,
      issuerCA: settings.issuerCA ?? null,
      clientCA: settings.clientCA ?? null,
      keyDigest: settings.keyDigest,
      identityDir: settings.identityDir,
    };
  },
  async issue(settings, context) {
    const { issueTenantCertificate } = await import('./issue.js');
    return issueTenantCertificate(settings, context);
  },
};
