/**
 * The documents the library reads. They mirror the JSON Schemas in `schemas/` (the source of truth; a test checks
 * that these types and the schemas agree).
 *
 * @see https://github.com/kubernetes/enhancements/tree/master/keps/sig-multicluster/4322-cluster-inventory
 */

/** kubeconfig's Cluster, in its kebab-case JSON form, as ClusterProfile `status.accessProviders[].cluster` holds it. */
export interface Cluster {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  /** A file path on the producer's machine: meaningless to a consumer and ignored. */
  'certificate-authority'?: string;
  /** Base64 of the PEM CA bundle. */
  'certificate-authority-data'?: string;
  'proxy-url'?: string;
  'disable-compression'?: boolean;
  extensions?: NamedExtension[];
}

/** A named extension of a cluster: the ClusterProfile's (and kubeconfig's) `extensions` entry. */
export interface NamedExtension {
  name: string;
  extension: unknown;
}

/** One access provider of a ClusterProfile's status: its name (matched against the providers file) and its cluster. */
export interface AccessProvider {
  name: string;
  /** Required by v1alpha2; v1alpha1 allows an entry without it (resolution then fails with ERR_PROFILE_INVALID). */
  cluster?: Cluster;
}

/** A ClusterProfile object (multicluster.x-k8s.io v1alpha1 or v1alpha2): what this package reads of it. */
export interface ClusterProfile {
  apiVersion: 'multicluster.x-k8s.io/v1alpha1' | 'multicluster.x-k8s.io/v1alpha2';
  kind: 'ClusterProfile';
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  spec?: { displayName?: string; clusterManager?: { name: string } };
  status?: {
    accessProviders?: AccessProvider[];
    /** @deprecated v1alpha1 only; `accessProviders` wins on a name clash. */
    credentialProviders?: AccessProvider[];
    [key: string]: unknown;
  };
}

import type {
  ExecApiVersion,
  ExecCluster,
  ExecConfig,
  ExecCredentialStatus,
  InteractiveMode,
} from '../base/exec-credential.js';

export type { ExecApiVersion, ExecCluster, ExecConfig, ExecCredentialStatus, InteractiveMode };

/** How a provider takes the profile's additional-args extension: `Append` to the plugin's args, or `Ignore` (unset). */
export type CLIArgsPolicy = '' | 'Append' | 'Ignore';
/**
 * How a provider takes the profile's additional-envs extension: merged into the plugin's env (`AppendIfNotExists`,
 * `Replace`), or `Ignore` (or unset).
 */
export type EnvVarsPolicy = '' | 'AppendIfNotExists' | 'Replace' | 'Ignore';

/** One entry of the providers file. */
export interface ProviderConfig {
  name: string;
  execConfig?: ExecConfig;
  profileSourcedCLIArgsPolicy?: CLIArgsPolicy;
  profileSourcedEnvVarsPolicy?: EnvVarsPolicy;
  /**
   * Not in upstream's format (its reader ignores it): variables the profile's additional-envs extension may set even
   * though they can take over the plugin or move its credentials (`NODE_OPTIONS`, `LD_PRELOAD`, `PATH`,
   * `KUBECONFIG`...), by exact name, any case. Default: none (such a variable is `ERR_PROFILE_ENV_DENIED`).
   */
  allowedProfileEnvVars?: string[];
  /**
   * Not in upstream's format (its reader ignores it): whether a profile may turn TLS verification off with
   * `insecure-skip-tls-verify: true`. Default false (`ERR_PROFILE_INSECURE_TLS_DENIED`).
   */
  allowInsecureSkipTLSVerify?: boolean;
}

/** The providers file (`--clusterprofile-provider-file`), exactly cluster-inventory-api's format. */
export interface AccessConfig {
  providers: ProviderConfig[];
}

/**
 * What {@link resolveClusterAccess} returns: plain data for callers that do not use client-node. `exec` is the
 * final exec config (policies applied, `interactiveMode` forced to `Never`); `cluster` is the connection and what
 * the exec layer hands the plugin when `exec.provideClusterInfo` is true.
 */
export interface ResolvedClusterAccess {
  /** The chosen provider (the first providers-file entry the profile lists). */
  providerName: string;
  /** `metadata.namespace/metadata.name` of the profile, for messages and cache keys. */
  profile: { namespace?: string; name: string };
  cluster: ExecCluster;
  exec: ExecConfig & { args: string[]; env: { name: string; value: string }[]; interactiveMode: 'Never' };
}
