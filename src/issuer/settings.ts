/** What `clusterprofile issuer serve` (and the other issuer actions) are configured with: flags after parsing. */
export interface IssuerSettings {
  /** Where the state lives (default `data-dir`): ./state/issuer-state.ts. */
  state?: 'data-dir' | 'kubernetes';
  /** `--state data-dir` (required there). */
  dataDir?: string;
  /** `--state kubernetes`: the namespace of the state objects (default: the kubeconfig context's or the pod's). */
  namespace?: string;
  /** The HTTPS certificate and key (PEM files, e.g. a mounted Secret) instead of one from the state's serving CA. */
  tlsCertFile?: string;
  tlsKeyFile?: string;
  /** The provider cluster ID; absent: the one recorded in DATA_DIR/issuer.json. */
  providerClusterID?: string;
  apiServer?: string;
  apiServerCaFile?: string;
  certLifetimeMs: number;
  nonceTtlMs: number;
  /** `--state kubernetes`: how often spent nonce records are collected (±50 %; default 30 s). */
  nonceCollectionMs?: number;
  groups: readonly string[];
  liqoCompat: boolean;
  signer: 'embedded' | 'kubernetes';
  /** `--signer kubernetes` and `--state kubernetes`: the kubeconfig (kubectl's order: src/kube/kubeconfig-loader.ts). */
  kubeconfig?: string;
  kubeContext?: string;
  signerTimeoutMs?: number;
}
