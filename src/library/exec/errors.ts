import { CredentialsError } from '../../core/errors.js';

/**
 * Codes raised by the exec credential implementation. Match on `error.code`.
 *
 * | code | when |
 * | --- | --- |
 * | `ERR_EXEC_CONFIG_INVALID` | the exec config itself is unusable (no command, unknown apiVersion / interactiveMode) |
 * | `ERR_EXEC_NOT_FOUND` | the command does not exist or is not executable (message carries `installHint`) |
 * | `ERR_EXEC_FAILED` | the plugin exited non-zero or was killed by a signal (message carries its stderr) |
 * | `ERR_EXEC_TIMEOUT` | the plugin ran past the timeout; its process group was killed |
 * | `ERR_EXEC_OUTPUT_INVALID` | stdout is not an ExecCredential client-go accepts (garbage, no status, ...) |
 * | `ERR_EXEC_API_VERSION_MISMATCH` | the plugin answered with another apiVersion than configured |
 * | `ERR_EXEC_RECURSION` | exec plugins nested deeper than the limit (a plugin that runs kubectl that runs the plugin ...) |
 * | `ERR_EXEC_INTERACTIVE` | interactiveMode `Always` without a terminal |
 */
export type ExecErrorCode =
  | 'ERR_EXEC_CONFIG_INVALID'
  | 'ERR_EXEC_NOT_FOUND'
  | 'ERR_EXEC_FAILED'
  | 'ERR_EXEC_TIMEOUT'
  | 'ERR_EXEC_OUTPUT_INVALID'
  | 'ERR_EXEC_API_VERSION_MISMATCH'
  | 'ERR_EXEC_RECURSION'
  | 'ERR_EXEC_INTERACTIVE';

export type ExecError = CredentialsError<ExecErrorCode>;

export function execError(
  code: ExecErrorCode,
  message: string,
  options: { path?: string; hint?: string; cause?: unknown } = {},
): ExecError {
  return new CredentialsError<ExecErrorCode>(code, message, options);
}
