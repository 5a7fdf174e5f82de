// The package's public surface: the backend module (the default export, what `backend.add(import(...))` loads) and
// its parts for a backend that wires them itself. Only named exports besides the default.
export { kubernetesModuleClusterProfile as default } from './module.js';
export { kubernetesModuleClusterProfile } from './module.js';
export { ClusterProfileAuthStrategy, UNAVAILABLE_TOKEN } from './auth-strategy.js';
export { CLUSTERPROFILE_AUTH_PROVIDER, ClusterProfileClusterSupplier, clusterDetailsOf } from './cluster-supplier.js';
export { CONFIG_KEY, readClusterProfilesConfig } from './config.js';
export type { ClusterProfilesConfig } from './config.js';
export { startFleet } from './start-fleet.js';
