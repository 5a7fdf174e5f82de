/**
 * The one ClusterProfileFleet behind the module: the providers file loaded, the fleet started on the hub (its first
 * list applied) without member clients (Backstage sends its own requests: it only needs each member's credential).
 * A failure to start is the fleet's coded error with the configuration key it comes from in its message and path, so
 * that the operator knows which line of app-config.yaml to fix.
 */
import type { LoggerService } from '@backstage/backend-plugin-api';
import {
  ClusterProfileFleet,
  CredentialsError,
  formatError,
  isCredentialsError,
  loadAccessConfig,
  type FleetHubOptions,
} from 'clusterprofile-credentials';
import { CONFIG_KEY, type ClusterProfilesConfig } from './config.js';

/** The configuration key an error of the fleet's start comes from. */
function keyOf(code: string, config: ClusterProfilesConfig): string {
  if (code.startsWith('ERR_ACCESS_CONFIG_')) return 'providersFile';
  if (code === 'ERR_FLEET_OPTIONS' || code === 'ERR_FLEET_HUB_FORBIDDEN') return 'namespace';
  if (code === 'ERR_FLEET_HUB_REQUEST' && config.labelSelector !== undefined) return 'labelSelector';
  if (config.hub.inCluster) return 'hub.inCluster';
  return config.hub.kubeconfig === undefined ? 'hub' : 'hub.kubeconfig';
}

/** `error` (a coded error of the fleet or the providers file) restated for the configuration key it comes from. */
function configError(error: unknown, config: ClusterProfilesConfig): unknown {
  if (!isCredentialsError(error)) return error;
  const key = `${CONFIG_KEY}.${keyOf(error.code, config)}`;
  return new CredentialsError(error.code, `${key}: ${error.message}`, {
    path: key,
    ...(error.hint === undefined ? {} : { hint: error.hint }),
    cause: error,
  });
}

/** The fleet's reports in Backstage's log: profiles that do not resolve, credential failures, hub trouble. */
function logFleet(fleet: ClusterProfileFleet, logger: LoggerService): void {
  const where = (name: string) => `ClusterProfile ${fleet.namespace}/${name}`;
  fleet.on('added', (event) => logger.info(`${where(event.name)}: listed (provider ${event.member.providerName})`));
  fleet.on('removed', (event) => logger.info(`${where(event.name)}: no longer listed (${event.reason})`));
  fleet.on('invalid', (event) => logger.warn(`${where(event.name)} is not listed: ${formatError(event.error)}`));
  fleet.on('credentialError', (event) => {
    if (event.failures === 1) logger.warn(`${where(event.name)}: no credential: ${formatError(event.error)}`);
  });
  fleet.on('hubError', (event) => {
    if (event.failures === 1) logger.warn(`the hub's ClusterProfiles: ${formatError(event.error)} (retrying)`);
  });
}

/** Loads the providers file and starts the fleet; rejects with a coded error naming the configuration key. */
export async function startFleet(config: ClusterProfilesConfig, logger: LoggerService): Promise<ClusterProfileFleet> {
  let fleet: ClusterProfileFleet;
  try {
    const hub: FleetHubOptions = config.hub.inCluster
      ? { inCluster: true }
      : {
          ...(config.hub.kubeconfig === undefined ? {} : { kubeconfig: config.hub.kubeconfig }),
          ...(config.hub.context === undefined ? {} : { context: config.hub.context }),
        };
    fleet = new ClusterProfileFleet({
      namespace: config.namespace,
      accessConfig: await loadAccessConfig(config.providersFile),
      hub: config.labelSelector === undefined ? hub : { ...hub, labelSelector: config.labelSelector },
      clients: false,
      requireHealthy: config.requireHealthy,
      ...(config.refreshMarginSeconds === undefined
        ? {}
        : { refresh: { marginMs: config.refreshMarginSeconds * 1000 } }),
      warn: (message) => logger.warn(message),
    });
  } catch (error) {
    throw configError(error, config);
  }
  logFleet(fleet, logger);
  try {
    await fleet.start();
  } catch (error) {
    await fleet.close();
    throw configError(error, config);
  }
  return fleet;
}
