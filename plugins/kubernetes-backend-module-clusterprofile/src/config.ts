/**
 * The module's configuration, `kubernetes.clusterProfiles` in app-config.yaml (schema: ../config.d.ts), read and
 * checked here: each key of the wrong type is `ERR_BACKSTAGE_CONFIG` naming the key, before anything is started.
 * Backstage's own reader would throw an uncoded error; the raw values are checked instead.
 */
import type { RootConfigService } from '@backstage/backend-plugin-api';
import { CredentialsError } from 'clusterprofile-credentials';

/** Where the module's configuration lives. */
export const CONFIG_KEY = 'kubernetes.clusterProfiles';

/** The module's configuration, checked. */
export interface ClusterProfilesConfig {
  hub: { kubeconfig?: string; context?: string; inCluster: boolean };
  namespace: string;
  providersFile: string;
  labelSelector: string | undefined;
  requireHealthy: boolean;
  refreshMarginSeconds: number | undefined;
}

function fail(key: string, message: string): never {
  throw new CredentialsError('ERR_BACKSTAGE_CONFIG', `${CONFIG_KEY}.${key}: ${message}`, {
    path: `${CONFIG_KEY}.${key}`,
  });
}

function typeOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

function optionalString(section: Record<string, unknown>, key: string, prefix = ''): string | undefined {
  const value = section[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '')
    fail(`${prefix}${key}`, `must be a non-empty string, got ${typeOf(value)}`);
  return value;
}

function optionalBoolean(section: Record<string, unknown>, key: string, prefix = ''): boolean {
  const value = section[key];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') fail(`${prefix}${key}`, `must be true or false, got ${typeOf(value)}`);
  return value;
}

function isSection(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads `kubernetes.clusterProfiles`. Throws `ERR_BACKSTAGE_CONFIG` (path: the key) when it is missing, a key has
 * the wrong type, a required key is missing, or the hub is given both as a kubeconfig and as in-cluster.
 */
export function readClusterProfilesConfig(config: RootConfigService): ClusterProfilesConfig {
  const raw = config.getOptional(CONFIG_KEY);
  if (raw === undefined) {
    throw new CredentialsError(
      'ERR_BACKSTAGE_CONFIG',
      `${CONFIG_KEY} is missing: the module needs the hub, the inventory namespace and the providers file`,
      { path: CONFIG_KEY },
    );
  }
  if (!isSection(raw)) {
    throw new CredentialsError('ERR_BACKSTAGE_CONFIG', `${CONFIG_KEY} must be an object, got ${typeOf(raw)}`, {
      path: CONFIG_KEY,
    });
  }
  const hubRaw = raw['hub'] ?? {};
  if (!isSection(hubRaw)) fail('hub', `must be an object (kubeconfig, context or inCluster), got ${typeOf(hubRaw)}`);
  const kubeconfig = optionalString(hubRaw, 'kubeconfig', 'hub.');
  const context = optionalString(hubRaw, 'context', 'hub.');
  const inCluster = optionalBoolean(hubRaw, 'inCluster', 'hub.');
  if (inCluster && (kubeconfig !== undefined || context !== undefined)) {
    fail('hub', 'give either kubeconfig (and context) or inCluster: true, not both');
  }
  const namespace = optionalString(raw, 'namespace') ?? fail('namespace', 'is required (the inventory namespace)');
  const providersFile =
    optionalString(raw, 'providersFile') ?? fail('providersFile', 'is required (the providers file, JSON)');
  const margin = raw['refreshMarginSeconds'];
  if (margin !== undefined && (typeof margin !== 'number' || !Number.isInteger(margin) || margin < 1)) {
    fail('refreshMarginSeconds', `must be a whole number of seconds of at least 1, got ${JSON.stringify(margin)}`);
  }
  return {
    hub: {
      ...(kubeconfig === undefined ? {} : { kubeconfig }),
      ...(context === undefined ? {} : { context }),
      inCluster,
    },
    namespace,
    providersFile,
    labelSelector: optionalString(raw, 'labelSelector'),
    requireHealthy: optionalBoolean(raw, 'requireHealthy'),
    refreshMarginSeconds: margin as number | undefined,
  };
}
