/**
 * The issuer, the provider side of tenant-cert, as the CLI's {@link import('../cli/commands/issuer.js').loadIssuer}
 * hands it out: opening a data dir or the Kubernetes state, serving, the trust store, the groups policy, the Tenant
 * reconciler (`clusterprofile issuer`, `tenant nonce|accept`). Heavy (the HTTPS server, X.509, the schemas): loaded
 * only by the commands that need it. It speaks the documents of src/wire/tenant-cert/ and imports nothing of the
 * client side (src/plugin/, src/providers/).
 */
export { DATA_FILES, servingMaterial } from './state/data-dir/data-dir.js';
export type { IssuerState } from './state/issuer-state.js';
export { checkGroups } from './policy.js';
export { OPS_PATHS, startIssuerServer, startMetricsServer } from './server.js';
export type {
  ClosedIssuer,
  HandshakeLogEntry,
  IssuerServerOptions,
  Readiness,
  ReadinessCheck,
  RunningIssuer,
} from './server.js';
export { ISSUER_METRICS, IssuerMetrics } from './metrics.js';
export { ALLOWED_PERIODS, BackgroundLoops, MIN_ALLOWANCE_MS } from './background.js';
export type { BackgroundLoop, LoopReport } from './background.js';
export { configError, openIssuer, openKubernetesTrust, parseListen } from './setup.js';
export type { IssuerSettings, OpenIssuer } from './setup.js';
export { TrustStore } from './state/data-dir/trust-files.js';
export type { TrustRecord, TrustedConsumer } from './state/trust-record.js';
export { startTenantControllerFor } from './tenant-controller.js';
export type { RunningTenantController } from './tenant-controller.js';
