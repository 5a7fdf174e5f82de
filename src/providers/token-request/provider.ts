/**
 * `clusterprofile-token-request`: bound, audience-scoped, short-lived service-account tokens minted with the
 * TokenRequest API on the member cluster, renewed 80% into their lifetime — or, in Secret Reader mode, the token the
 * hub keeps in Secret `<namespace>/<clusterName>` (KEP-4322's reference plugin).
 *
 * The bootstrap identity that may call TokenRequest is never a long-lived admin token: a tenant-cert identity,
 * a kubeconfig (`--bootstrap-kubeconfig`, else found as kubectl would: KUBECONFIG, ~/.kube/config, in-cluster — the
 * default) or only the in-cluster service account, each needing only `create` on `serviceaccounts/token` for one
 * service account.
 */
import { CredentialsError } from '../../base/errors.js';
import type { CredentialProvider, FlagValues } from '../../plugin/provider.js';
import { parseTokenRequestSettings, type Bootstrap, type TokenRequestProviderSettings } from './settings.js';

export type { Bootstrap, TokenRequestProviderSettings };

export const tokenRequestFlags = {
  mode: { type: 'string', description: 'token-request (default) or secret-reader', placeholder: 'MODE' },
  namespace: {
    type: 'string',
    description: 'namespace of the service account (default for spec.cluster.config.namespace)',
    placeholder: 'NS',
  },
  'service-account': {
    type: 'string',
    description: 'service account name (default for spec.cluster.config.serviceAccount)',
    placeholder: 'NAME',
  },
  audience: {
    type: 'string',
    multiple: true,
    description: 'token audience (default: spec.cluster.config.audiences)',
    placeholder: 'AUD',
  },
  'expiration-seconds': {
    type: 'string',
    description: 'requested lifetime, 600..2^32 (default 3600)',
    placeholder: 'SECONDS',
  },
  bootstrap: {
    type: 'string',
    description:
      'identity that calls TokenRequest: kubeconfig (the default: --bootstrap-kubeconfig, else KUBECONFIG, else ~/.kube/config, else in-cluster), ' +
      "in-cluster (only the pod's service account) or tenant-cert (the default when --key-file is given without --bootstrap-kubeconfig)",
    placeholder: 'KIND',
  },
  'bootstrap-kubeconfig': {
    type: 'string',
    description: 'kubeconfig whose current user calls TokenRequest (implies --bootstrap kubeconfig)',
    placeholder: 'FILE',
  },
  'cluster-id': {
    type: 'string',
    description: "tenant-cert bootstrap: this (consumer) cluster's ID",
    placeholder: 'ID',
  },
  'key-file': {
    type: 'string',
    description: "tenant-cert bootstrap: the consumer's PKCS#8 PEM private key",
    placeholder: 'FILE',
  },
  'identity-dir': {
    type: 'string',
    description:
      "tenant-cert bootstrap: where `clusterprofile identity import` stored Identities (default $HOME/.kube/clusterprofile/identities, else the user's home directory's)",
    placeholder: 'DIR',
  },
  'hub-kubeconfig': {
    type: 'string',
    description: 'secret-reader: kubeconfig of the hub (default: KUBECONFIG, else ~/.kube/config, else in-cluster)',
    placeholder: 'FILE',
  },
  'secret-namespace': {
    type: 'string',
    description:
      'secret-reader: namespace of the Secrets (default: the hub context\'s or pod\'s namespace, then "default")',
    placeholder: 'NS',
  },
  'managed-serviceaccount': {
    type: 'string',
    description:
      "secret-reader: read Secret <clusterName>-<NAME>, Open Cluster Management's layout (its cp-creds plugin's flag)",
    placeholder: 'NAME',
  },
  timeout: {
    type: 'string',
    description: 'deadline for the API server exchange: connect, TLS, answer and retries (default 30)',
    placeholder: 'SECONDS',
  },
} as const;

type Flags = typeof tokenRequestFlags;

function usage(message: string, path: string): CredentialsError {
  return new CredentialsError('ERR_TOKEN_REQUEST_USAGE', message, { path });
}

/** `--timeout` in seconds, (0, 600]; default 30. */
function parseTimeout(value: string | undefined): number {
  if (value === undefined) return 30_000;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 600) {
    throw usage(`--timeout ${JSON.stringify(value)} is not a number of seconds in (0, 600]`, '--timeout');
  }
  return Math.round(seconds * 1000);
}

function chooseBootstrap(flags: FlagValues<Flags>): Bootstrap {
  const kind =
    flags.bootstrap ??
    (flags['key-file'] !== undefined && flags['bootstrap-kubeconfig'] === undefined ? 'tenant-cert' : 'kubeconfig');
  switch (kind) {
    case 'kubeconfig':
      return flags['bootstrap-kubeconfig'] === undefined ? { kind } : { kind, file: flags['bootstrap-kubeconfig'] };
    case 'in-cluster':
      return { kind };
    case 'tenant-cert':
      if (flags['cluster-id'] === undefined || flags['key-file'] === undefined) {
        throw usage(
          '--bootstrap tenant-cert needs --cluster-id and --key-file',
          flags['cluster-id'] === undefined ? '--cluster-id' : '--key-file',
        );
      }
      return {
        kind,
        clusterId: flags['cluster-id'],
        keyFile: flags['key-file'],
        ...(flags['identity-dir'] === undefined ? {} : { identityDir: flags['identity-dir'] }),
      };
    default:
      throw usage(
        `unknown --bootstrap ${JSON.stringify(kind)}: expected tenant-cert, kubeconfig or in-cluster`,
        '--bootstrap',
      );
  }
}

function asConfig(config: unknown): Record<string, unknown> | undefined {
  if (config === undefined || config === null) {
    return undefined;
  }
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw usage('spec.cluster.config must be an object', 'spec.cluster.config');
  }
  return config as Record<string, unknown>;
}

export const tokenRequestProvider: CredentialProvider<Flags, TokenRequestProviderSettings> = {
  name: 'token-request',
  description:
    'bound service-account tokens via the TokenRequest API, renewed before they expire (or Secret Reader mode)',
  flags: tokenRequestFlags,
  minRemainingSeconds: 60,
  settings({ flags, input }) {
    const mode = flags.mode ?? 'token-request';
    const timeoutMs = parseTimeout(flags.timeout);
    if (mode === 'secret-reader') {
      return {
        mode,
        timeoutMs,
        config: input.spec.cluster?.config,
        hubKubeconfig: flags['hub-kubeconfig'],
        secretNamespace: flags['secret-namespace'],
        managedServiceAccount: flags['managed-serviceaccount'],
      };
    }
    if (mode !== 'token-request') {
      throw usage(`unknown --mode ${JSON.stringify(mode)}: expected token-request or secret-reader`, '--mode');
    }
    const cluster = input.spec.cluster;
    if (cluster === undefined || cluster.server === '') {
      throw usage(
        'the member cluster is unknown: set provideClusterInfo: true in the exec config so spec.cluster reaches the plugin',
        'spec.cluster',
      );
    }
    const request = parseTokenRequestSettings({
      config: asConfig(cluster.config),
      flags: {
        namespace: flags.namespace,
        serviceAccount: flags['service-account'],
        audiences: flags.audience.length === 0 ? undefined : flags.audience,
        expirationSeconds: flags['expiration-seconds'],
      },
    });
    return { mode, cluster, request, bootstrap: chooseBootstrap(flags), timeoutMs };
  },
  cacheKey(settings) {
    if (settings.mode === 'secret-reader') {
      const { timeoutMs: _deadline, ...identity } = settings;
      return identity;
    }
    // The token's identity: which API server (and how it is verified) and which service account, audiences, lifetime
    // and bound object. The bootstrap identity only authorises the minting, it does not change the token.
    const { cluster, request } = settings;
    return {
      server: cluster.server,
      ca: cluster['certificate-authority-data'] ?? null,
      tlsServerName: cluster['tls-server-name'] ?? null,
      request,
    };
  },
  async issue(settings, context) {
    const { issueToken } = await import('./issue.js');
    return issueToken(settings, context);
  },
};
