/**
 * The credential plugin policy of client-go 1.35 (`rest.Config.ExecProvider.PluginPolicy`, kubectl's kuberc
 * `credentialPluginPolicy` / `credentialPluginAllowlist`): which exec plugins may run at all. Same types, checks,
 * matching and messages as client-go v0.35's exec authenticator (plugin/pkg/client/auth/exec):
 *
 * - `''` or `AllowAll`: every plugin runs; `DenyAll`: none;
 * - `Allowlist`: a plugin runs when its command (cleaned like Go's `filepath.Clean`) or the path it resolves to is
 *   an entry's name verbatim, or when an entry with the same base name resolves (in PATH, like `exec.LookPath`) to
 *   the same path. A bare name is looked up in the PATH of the parent environment (not the plugin's `exec.env`), and
 *   the resolved file is what runs: the file checked is the file executed.
 *
 * client-go keeps the entries it resolved in the authenticator for later runs; here they are resolved on each run
 * (runs are rare: credentials are cached), which can only differ when PATH or the files change in between.
 */
import { CredentialsError, quote, type ErrorCodes } from '../base/errors.js';
import type { Env } from '../base/io.js';
import { notFoundProblem } from './own-plugin-hint.js';

/** kuberc's `credentialPluginPolicy`; `''` means `AllowAll`. */
export type CredentialPluginPolicyType = '' | 'AllowAll' | 'DenyAll' | 'Allowlist';

/** kuberc's `credentialPluginAllowlist` item: a command name (looked up in PATH) or a path. */
export interface CredentialPluginAllowlistEntry {
  name: string;
}

/** client-go's `PluginPolicy`: `allowlist` must be given with `Allowlist` and only then. */
export interface CredentialPluginPolicy {
  policyType: CredentialPluginPolicyType;
  allowlist?: readonly CredentialPluginAllowlistEntry[];
}

export type PluginPolicyErrorCode = ErrorCodes<
  'ERR_EXEC_PLUGIN_POLICY_INVALID' | 'ERR_EXEC_PLUGIN_DENIED' | 'ERR_EXEC_NOT_FOUND' | 'ERR_EXEC_FAILED'
>;

const { accessSync, constants, statSync } = process.getBuiltinModule('node:fs');
const { posix } = process.getBuiltinModule('node:path');

/** Go's `filepath.Clean` on Unix: the shortest equivalent path, no trailing slash, `.` for an empty one. */
export function cleanPath(path: string): string {
  if (path === '') return '.';
  const normalized = posix.normalize(path);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

function invalid(reason: string): CredentialsError<PluginPolicyErrorCode> {
  return new CredentialsError('ERR_EXEC_PLUGIN_POLICY_INVALID', `invalid plugin policy: ${reason}`, {
    path: 'pluginPolicy',
  });
}

/** client-go's `ValidatePluginPolicy`: throws `ERR_EXEC_PLUGIN_POLICY_INVALID` with its text. */
export function validatePluginPolicy(policy: CredentialPluginPolicy | undefined): void {
  if (policy === undefined) return;
  const { policyType, allowlist } = policy;
  switch (policyType) {
    case '':
    case 'AllowAll':
    case 'DenyAll':
      if (allowlist !== undefined) {
        throw invalid(
          `misconfigured credential plugin allowlist: plugin policy is ${quote(policyType)} but allowlist is non-nil`,
        );
      }
      return;
    case 'Allowlist':
      if (allowlist === undefined)
        throw invalid('credential plugin policy set to "Allowlist", but allowlist is unspecified');
      if (allowlist.length === 0)
        throw invalid(
          'credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead',
        );
      allowlist.forEach((entry, index) => {
        const name = entry?.name ?? '';
        if (name === '')
          throw invalid(`misconfigured credential plugin allowlist: empty allowlist entry #${index + 1}`);
        if (cleanPath(name) !== name)
          throw invalid(`non-normalized file path: ${quote(name)} vs ${quote(cleanPath(name))}`);
      });
      return;
    default:
      throw invalid(`unknown plugin policy: ${quote(policyType)}`);
  }
}

type Lookup =
  | { path: string; error?: undefined }
  | { path: string | undefined; error: { kind: 'not-found' | 'dot' | 'other'; message: string } };

/** Go's `findExecutable` on Unix: a file (not a directory) the user may execute. */
function executableProblem(file: string): string | undefined {
  try {
    if (statSync(file).isDirectory()) return 'is a directory';
    accessSync(file, constants.X_OK);
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT'
      ? 'no such file or directory'
      : code === 'EACCES'
        ? 'permission denied'
        : (error as Error).message;
  }
}

/** Go's `exec.LookPath` on Unix, with `path` the PATH to search. */
export function lookPath(file: string, path: string): Lookup {
  if (file.includes('/')) {
    const problem = executableProblem(file);
    return problem === undefined
      ? { path: file }
      : {
          path: undefined,
          error: {
            kind: problem === 'no such file or directory' ? 'not-found' : 'other',
            message: `exec: ${quote(file)}: ${problem}`,
          },
        };
  }
  for (const entry of path.split(':')) {
    const candidate = posix.join(entry === '' ? '.' : entry, file);
    if (executableProblem(candidate) === undefined) {
      if (!posix.isAbsolute(candidate)) {
        return {
          path: candidate,
          error: {
            kind: 'dot',
            message: `exec: ${quote(file)}: cannot run executable found relative to current directory`,
          },
        };
      }
      return { path: candidate };
    }
  }
  return {
    path: undefined,
    error: { kind: 'not-found', message: `exec: ${quote(file)}: executable file not found in $PATH` },
  };
}

/**
 * Whether `command` may run under `policy` (client-go's `updateCommandAndCheckAllowlistLocked`), and which file
 * to run: the command itself under `AllowAll`, the resolved path under `Allowlist`. Throws `ERR_EXEC_PLUGIN_DENIED`
 * with client-go's text (the message also carries the policy's reason), or, for a command the allowlist names but
 * that cannot be run, the error client-go's run would give (`ERR_EXEC_NOT_FOUND` / `ERR_EXEC_FAILED`).
 */
export function checkPluginPolicy(
  policy: CredentialPluginPolicy | undefined,
  command: string,
  parentEnv: Env,
  installHint?: string,
): string {
  const policyType = policy?.policyType ?? '';
  const cmd = cleanPath(command);
  const denied = (message: string, path: string): CredentialsError<PluginPolicyErrorCode> =>
    new CredentialsError('ERR_EXEC_PLUGIN_DENIED', message, {
      path,
      hint: 'allow it in the credential plugin policy (an allowlist entry with its name or path), or run another plugin',
    });
  switch (policyType) {
    case '':
    case 'AllowAll':
      return command;
    case 'DenyAll':
      throw denied(`plugin ${quote(cmd)} not allowed: policy set to "DenyAll"`, command);
    case 'Allowlist':
      break;
    default:
      throw invalid(`unknown plugin policy ${quote(policyType)}`);
  }
  const allowlist = policy?.allowlist ?? [];
  const allowed = new Set(allowlist.map((entry) => entry.name).filter((name) => name !== ''));
  const searchPath = parentEnv['PATH'] ?? '';
  // exec.Command(cmd): a bare name is looked up at once; a path is taken as it is.
  const initial: Lookup = cmd.includes('/') ? { path: cmd } : lookPath(cmd, searchPath);
  const cmdPath = initial.path ?? cmd;
  const runnable = (): string => {
    if (initial.error === undefined) return cmdPath;
    // Allowed by name, but Go's cmd.Run would fail with the lookup's error.
    if (initial.error.kind === 'not-found') {
      const { message, hint } = notFoundProblem(cmd, installHint);
      throw new CredentialsError<PluginPolicyErrorCode>('ERR_EXEC_NOT_FOUND', message, {
        path: command,
        ...(hint ? { hint } : {}),
      });
    }
    throw new CredentialsError<PluginPolicyErrorCode>('ERR_EXEC_FAILED', initial.error.message, { path: command });
  };
  if (allowed.has(cmd) || allowed.has(cmdPath)) return runnable();

  const resolved: Lookup = cmdPath !== cmd ? initial : lookPath(cmdPath, searchPath);
  if (resolved.error !== undefined || resolved.path === undefined) {
    throw denied(
      `plugin path ${quote(cmdPath)} cannot be resolved for credential plugin allowlist check: ${resolved.error?.message ?? 'not found'}`,
      command,
    );
  }
  if (allowed.has(resolved.path)) return resolved.path;
  // Entries with the same base name, resolved the same way.
  const base = posix.basename(cmdPath);
  for (const entry of allowlist) {
    if (base !== '' && base !== posix.basename(entry.name)) continue;
    const entryResolved = lookPath(entry.name, searchPath);
    if (entryResolved.error === undefined && entryResolved.path === resolved.path) return resolved.path;
  }
  throw denied(`plugin path ${quote(cmdPath)} is not permitted by the credential plugin allowlist`, command);
}
