/**
 * A kubeconfig for one ClusterProfile, from the result of `resolveClusterAccess`: the cluster of the chosen access
 * provider and a user whose credentials come from the exec plugin the providers file selects. kubectl (client-go)
 * then runs the plugin exactly as a controller would, including `spec.cluster.config` from the exec extension.
 *
 * @see https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins
 */
import { stringify } from 'yaml';
import { EXEC_EXTENSION_NAME } from './cluster-access.js';
import type { InteractiveMode, ResolvedClusterAccess } from './types.js';

/** Options of {@link kubeconfigFromAccess} and {@link renderKubeconfig}. */
export interface KubeconfigOptions {
  /** The name of the cluster, user and context. Default: `<namespace>/<name>` of the profile, or `<name>`. */
  name?: string;
  /**
   * The exec config's `interactiveMode` (default `Never`, as a controller runs it). A kubeconfig for a person sets
   * `IfAvailable` or `Always`, so kubectl hands the plugin the terminal for a login.
   */
  interactiveMode?: InteractiveMode;
}

/** The kubeconfig document (`apiVersion: v1, kind: Config`), as plain data. */
export interface KubeconfigDocument {
  apiVersion: 'v1';
  kind: 'Config';
  clusters: { name: string; cluster: Record<string, unknown> }[];
  users: { name: string; user: { exec: Record<string, unknown> } }[];
  contexts: { name: string; context: { cluster: string; user: string } }[];
  'current-context': string;
  preferences: Record<string, never>;
}

/**
 * Builds the kubeconfig document for a resolved ClusterProfile. Keys appear in a fixed order and only set fields are
 * written, so the same input always gives the same document. `cluster.config` (the `client.authentication.k8s.io/exec`
 * extension) becomes a cluster extension of that name, which client-go passes to the plugin as `spec.cluster.config`
 * when `provideClusterInfo` is true.
 *
 * @example
 * ```ts
 * const doc = kubeconfigFromAccess(resolveClusterAccess(profile, accessConfig));
 * doc['current-context']; // 'fleet/spoke-1'
 * ```
 */
export function kubeconfigFromAccess(
  access: ResolvedClusterAccess,
  options: KubeconfigOptions = {},
): KubeconfigDocument {
  const name =
    options.name ??
    (access.profile.namespace ? `${access.profile.namespace}/${access.profile.name}` : access.profile.name);
  const source = access.cluster;

  const cluster: Record<string, unknown> = { server: source.server };
  if (source['certificate-authority-data'] !== undefined) {
    cluster['certificate-authority-data'] = source['certificate-authority-data'];
  }
  if (source['tls-server-name'] !== undefined) cluster['tls-server-name'] = source['tls-server-name'];
  if (source['insecure-skip-tls-verify'] !== undefined) {
    cluster['insecure-skip-tls-verify'] = source['insecure-skip-tls-verify'];
  }
  if (source['proxy-url'] !== undefined) cluster['proxy-url'] = source['proxy-url'];
  if (source['disable-compression'] !== undefined) cluster['disable-compression'] = source['disable-compression'];
  if (source.config !== undefined) {
    cluster.extensions = [{ name: EXEC_EXTENSION_NAME, extension: structuredClone(source.config) }];
  }

  const execSource = access.exec;
  const exec: Record<string, unknown> = { apiVersion: execSource.apiVersion, command: execSource.command };
  if (execSource.args.length > 0) exec.args = [...execSource.args];
  if (execSource.env.length > 0) exec.env = execSource.env.map((v) => ({ name: v.name, value: v.value }));
  exec.provideClusterInfo = execSource.provideClusterInfo === true;
  exec.interactiveMode = options.interactiveMode ?? 'Never';
  if (execSource.installHint !== undefined) exec.installHint = execSource.installHint;

  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster }],
    users: [{ name, user: { exec } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
    'current-context': name,
    preferences: {},
  };
}

/**
 * Renders the kubeconfig of {@link kubeconfigFromAccess} as YAML (deterministic: same input, same bytes).
 *
 * @example
 * ```ts
 * import { writeFile } from 'node:fs/promises';
 * await writeFile('spoke-1.kubeconfig', renderKubeconfig(resolveClusterAccess(profile, accessConfig)), { mode: 0o600 });
 * // kubectl --kubeconfig spoke-1.kubeconfig get nodes
 * ```
 */
export function renderKubeconfig(access: ResolvedClusterAccess, options: KubeconfigOptions = {}): string {
  // Every string value double-quoted: kubectl reads YAML 1.1 (`yes`, `on`, `12:30` are not strings there), and
  // quoting all of them keeps the output independent of such rules.
  return stringify(kubeconfigFromAccess(access, options), {
    lineWidth: 0,
    aliasDuplicateObjects: false,
    defaultStringType: 'QUOTE_DOUBLE',
    defaultKeyType: 'PLAIN',
  });
}
