/**
 * The backend module `kubernetes.clusterprofile`: reads `kubernetes.clusterProfiles`, starts one fleet over the
 * hub's inventory, and gives Backstage's Kubernetes plugin its cluster supplier and its `clusterprofile` auth
 * strategy. The fleet closes when the backend shuts down. A configuration that cannot work (a key of the wrong type,
 * no hub, a namespace the hub refuses, a providers file that does not parse) fails the backend's start with a coded
 * error naming the key, as Backstage does for a module that cannot initialise.
 */
import { coreServices, createBackendModule } from '@backstage/backend-plugin-api';
import {
  kubernetesAuthStrategyExtensionPoint,
  kubernetesClusterSupplierExtensionPoint,
} from '@backstage/plugin-kubernetes-node';
import { ClusterProfileAuthStrategy } from './auth-strategy.js';
import { CLUSTERPROFILE_AUTH_PROVIDER, ClusterProfileClusterSupplier } from './cluster-supplier.js';
import { readClusterProfilesConfig } from './config.js';
import { startFleet } from './start-fleet.js';

/**
 * The module: add it to a backend with the Kubernetes plugin.
 *
 * @example
 * ```ts
 * backend.add(import('@backstage/plugin-kubernetes-backend'));
 * backend.add(import('@clusterprofile-credentials/backstage-plugin-kubernetes-backend-module-clusterprofile'));
 * ```
 */
export const kubernetesModuleClusterProfile = createBackendModule({
  pluginId: 'kubernetes',
  moduleId: 'clusterprofile',
  register(env) {
    env.registerInit({
      deps: {
        config: coreServices.rootConfig,
        logger: coreServices.logger,
        lifecycle: coreServices.lifecycle,
        clusterSupplier: kubernetesClusterSupplierExtensionPoint,
        authStrategy: kubernetesAuthStrategyExtensionPoint,
      },
      async init({ config, logger, lifecycle, clusterSupplier, authStrategy }) {
        const options = readClusterProfilesConfig(config);
        const fleet = await startFleet(options, logger);
        lifecycle.addShutdownHook(() => fleet.close());
        clusterSupplier.addClusterSupplier(new ClusterProfileClusterSupplier(fleet, options));
        authStrategy.addAuthStrategy(CLUSTERPROFILE_AUTH_PROVIDER, new ClusterProfileAuthStrategy(fleet, logger));
      },
    });
  },
});
