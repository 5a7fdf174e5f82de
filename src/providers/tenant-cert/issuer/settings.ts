/** What `clusterprofile issuer serve` (and the other issuer actions) are configured with: flags after parsing. */
export interface IssuerSettings {
  dataDir: string;
  /** The provider cluster ID; absent: the one recorded in DATA_DIR/issuer.json. */
  providerClusterID?: string;
  apiServer?: string;
  apiServerCaFile?: string;
  certLifetimeMs: number;
  nonceTtlMs: number;
  groups: readonly string[];
  liqoCompat: boolean;
  signer: 'embedded' | 'kubernetes';
  kubeconfig?: string;
  kubeContext?: string;
  signerTimeoutMs?: number;
}
