/**
 * Step 1 of an exec: the exec config + cluster → exactly what the plugin process gets (command, args, env with
 * KUBERNETES_EXEC_INFO, whether it is interactive). Pure: the parent env and the terminal check are passed in.
 *
 * @see https://github.com/kubernetes/enhancements/tree/master/keps/sig-auth/541-external-credential-providers
 */
import type { ExecApiVersion, ExecCluster, ExecConfig } from '../base/exec-credential.js';
import { EXEC_API_VERSIONS } from '../base/exec-credential.js';
import type { Env } from '../base/io.js';
import { execError } from './errors.js';

/** The environment variable counting how deeply exec plugins are nested (the recursion guard). */
export const EXEC_DEPTH_ENV = 'CLUSTERPROFILE_EXEC_DEPTH';
/** Default limit of nested exec plugins: a plugin may run a client that execs another plugin, once or twice. */
export const DEFAULT_MAX_EXEC_DEPTH = 3;

const API_VERSIONS: readonly string[] = EXEC_API_VERSIONS;

/** What {@link buildExecRequest} builds a plugin's start from besides its config: the environment, the terminal, the depth limit. */
export interface ExecRequestOptions {
  /** The parent environment the plugin inherits. Production default: `process.env` (read by the caller, not here). */
  env: Env;
  /** Whether the host's standard input is a terminal (for `IfAvailable` / `Always`). Default false. */
  stdinIsTerminal?: boolean;
  /** Nesting limit of the recursion guard. Default {@link DEFAULT_MAX_EXEC_DEPTH}. */
  maxDepth?: number;
}

/** How to start a plugin, from {@link buildExecRequest}: command, args, environment and its KUBERNETES_EXEC_INFO. */
export interface ExecRequest {
  /** The configured command: what messages name. */
  command: string;
  /** The file to run when it is not `command` itself (the path a credential plugin policy resolved and checked). */
  executable?: string;
  args: string[];
  /** The full environment of the child: parent, then exec.env (wins), then KUBERNETES_EXEC_INFO and the depth marker. */
  env: Record<string, string>;
  /** Whether the plugin gets the host's stdin (`spec.interactive`). */
  interactive: boolean;
  /** Shown when the command is missing. */
  installHint?: string;
  /** The KUBERNETES_EXEC_INFO document. */
  execInfo: {
    kind: 'ExecCredential';
    apiVersion: ExecApiVersion;
    spec: { interactive: boolean; cluster?: ExecCluster };
  };
}

/** `spec.cluster` as the plugin sees it: only the keys that are set, in kubeconfig's kebab-case. */
function execInfoCluster(cluster: ExecCluster): ExecCluster {
  const out: ExecCluster = { server: cluster.server };
  if (cluster['tls-server-name'] !== undefined) out['tls-server-name'] = cluster['tls-server-name'];
  if (cluster['insecure-skip-tls-verify'] !== undefined)
    out['insecure-skip-tls-verify'] = cluster['insecure-skip-tls-verify'];
  if (cluster['certificate-authority-data'] !== undefined) {
    out['certificate-authority-data'] = cluster['certificate-authority-data'];
  }
  if (cluster['proxy-url'] !== undefined) out['proxy-url'] = cluster['proxy-url'];
  if (cluster['disable-compression'] !== undefined) out['disable-compression'] = cluster['disable-compression'];
  if (cluster.config !== undefined) out.config = cluster.config;
  return out;
}

function interactiveFor(exec: ExecConfig, stdinIsTerminal: boolean): boolean {
  const mode =
    exec.interactiveMode ?? (exec.apiVersion === 'client.authentication.k8s.io/v1beta1' ? 'IfAvailable' : undefined);
  switch (mode) {
    case 'Never':
      return false;
    case 'IfAvailable':
      return stdinIsTerminal;
    case 'Always':
      if (!stdinIsTerminal) {
        throw execError(
          'ERR_EXEC_INTERACTIVE',
          'exec plugin cannot support interactive mode: standard input is not a terminal',
        );
      }
      return true;
    case undefined:
      throw execError(
        'ERR_EXEC_CONFIG_INVALID',
        `interactiveMode must be specified for ${exec.command} to use exec authentication plugin`,
        { path: 'exec.interactiveMode' },
      );
    default:
      throw execError('ERR_EXEC_CONFIG_INVALID', `unknown interactiveMode: ${JSON.stringify(mode)}`, {
        path: 'exec.interactiveMode',
      });
  }
}

/** The nesting depth the parent env says we are at (0 outside any plugin). */
export function execDepth(env: Env): number {
  const depth = Number.parseInt(env[EXEC_DEPTH_ENV] ?? '', 10);
  return Number.isInteger(depth) && depth > 0 ? depth : 0;
}

/**
 * Builds the plugin's invocation. Throws `ERR_EXEC_CONFIG_INVALID`, `ERR_EXEC_INTERACTIVE` or
 * `ERR_EXEC_RECURSION` (already `maxDepth` plugins deep).
 *
 * @example
 *   const request = buildExecRequest(exec, cluster, { env: process.env });
 *   JSON.parse(request.env.KUBERNETES_EXEC_INFO).spec.interactive; // false
 */
export function buildExecRequest(
  exec: ExecConfig,
  cluster: ExecCluster | undefined,
  options: ExecRequestOptions,
): ExecRequest {
  if (typeof exec.command !== 'string' || exec.command === '') {
    throw execError(
      'ERR_EXEC_CONFIG_INVALID',
      `command must be specified for ${exec.apiVersion} to use exec authentication plugin`,
      {
        path: 'exec.command',
      },
    );
  }
  if (!API_VERSIONS.includes(exec.apiVersion)) {
    throw execError('ERR_EXEC_CONFIG_INVALID', `exec plugin: invalid apiVersion ${JSON.stringify(exec.apiVersion)}`, {
      path: 'exec.apiVersion',
    });
  }
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_EXEC_DEPTH;
  const depth = execDepth(options.env);
  if (depth >= maxDepth) {
    throw execError(
      'ERR_EXEC_RECURSION',
      `exec: refusing to run ${exec.command}: exec credential plugins are already nested ${depth} deep (limit ${maxDepth})`,
      {
        path: EXEC_DEPTH_ENV,
        hint: 'a credential plugin must not run a client (kubectl, a controller) that execs the same plugin again',
      },
    );
  }
  const interactive = interactiveFor(exec, options.stdinIsTerminal ?? false);
  const execInfo: ExecRequest['execInfo'] = {
    kind: 'ExecCredential',
    apiVersion: exec.apiVersion,
    spec:
      exec.provideClusterInfo === true && cluster !== undefined
        ? { interactive, cluster: execInfoCluster(cluster) }
        : { interactive },
  };
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.env)) {
    if (value !== undefined) env[name] = value;
  }
  for (const variable of exec.env ?? []) {
    env[variable.name] = variable.value;
  }
  env.KUBERNETES_EXEC_INFO = JSON.stringify(execInfo);
  env[EXEC_DEPTH_ENV] = String(depth + 1);
  const request: ExecRequest = { command: exec.command, args: [...(exec.args ?? [])], env, interactive, execInfo };
  if (exec.installHint !== undefined && exec.installHint !== '') request.installHint = exec.installHint;
  return request;
}
