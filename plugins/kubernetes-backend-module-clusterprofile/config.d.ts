// The configuration schema of the module (Backstage reads it through package.json's `configSchema`): the keys
// src/config.ts reads under `kubernetes.clusterProfiles`.
export interface Config {
  kubernetes?: {
    /** The ClusterProfile inventory whose members Backstage's Kubernetes plugin shows. */
    clusterProfiles?: {
      /**
       * How to reach the hub that holds the ClusterProfiles. Default (none given): KUBECONFIG, else ~/.kube/config,
       * else the pod's service account.
       */
      hub?: {
        /** A kubeconfig file for the hub (relative paths resolve against the backend's working directory). */
        kubeconfig?: string;
        /** A context of that kubeconfig instead of its current one. */
        context?: string;
        /** Only the pod's service account (Backstage running on the hub); not with `kubeconfig`. */
        inCluster?: boolean;
      };
      /** The inventory: the namespace of ClusterProfiles on the hub. */
      namespace: string;
      /** The providers file (JSON): which credential plugin reaches which access provider. */
      providersFile: string;
      /** Only the ClusterProfiles this label selector matches (e.g. `env=prod`). */
      labelSelector?: string;
      /** Show only members whose ControlPlaneHealthy condition is True (default false). */
      requireHealthy?: boolean;
      /** Refresh each credential this many seconds before it expires (default 60). */
      refreshMarginSeconds?: number;
    };
  };
}
