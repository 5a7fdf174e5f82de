/** Types of build.mjs (a plain script so that `npm run controlplane:build` needs no compile step). */
export declare const repoRoot: string;
export declare const cacheRoot: string;
export declare class GoRequirementError extends Error {}
export declare function goEnv(env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  /** Dex, the second real OpenID Provider (test/helpers/dex.ts). */
  dex: string;
  goclient: string;
  /** test/e2e/differential: the Go reference answering the differential test's cases. */
  differential: string;
  /** test/e2e/kubeconfig-differential: client-go's clientcmd loading rules for the kubeconfig fuzz target. */
  kubeconfigDifferential: string;
  /** Upstream's plugins/secretreader and plugins/kubeconfig-secretreader (test/e2e/upstream-plugins), unchanged. */
  secretreaderPlugin: string;
  kubeconfigSecretreaderPlugin: string;
  /** test/e2e/liqo: Liqo v1.2.0's consumer-side handshake functions and kubeconfig forging, as a JSON driver. */
  liqo: string;
  /** Open Cluster Management's registration binary (its hub controller writes ClusterProfiles), test/e2e/ocm. */
  ocmRegistration: string;
  /** cluster-proxy's addon-manager (test/e2e/cluster-proxy): writes the profiles' access provider. */
  clusterProxyAddonManager: string;
  /** managed-serviceaccount's manager and its cp-creds plugin (test/e2e/managed-serviceaccount), unchanged. */
  managedServiceAccount: string;
  cpCredsPlugin: string;
  /** Binary name → the version it reports (`kube-apiserver --version`, `etcd --version`). */
  versions: Record<string, string>;
  targets: Record<string, { built: boolean; seconds: number; dir: string }>;
}
export declare function ensureControlPlaneBinaries(options?: {
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** Only these targets (`etcd`, `kubernetes`, `dex`, …); the paths of the others are empty. */
  only?: string[];
}): Promise<ControlPlaneBinaries>;
