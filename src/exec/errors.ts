import { CredentialsError, type ErrorCodes } from '../base/errors.js';

/** Codes raised by the exec credential implementation (meanings: src/base/error-registry.ts). Match on `error.code`. */
export type ExecErrorCode = ErrorCodes<
  | 'ERR_EXEC_CONFIG_INVALID'
  | 'ERR_EXEC_NOT_FOUND'
  | 'ERR_EXEC_FAILED'
  | 'ERR_EXEC_TIMEOUT'
  | 'ERR_EXEC_OUTPUT_INVALID'
  | 'ERR_EXEC_API_VERSION_MISMATCH'
  | 'ERR_EXEC_RECURSION'
  | 'ERR_EXEC_INTERACTIVE'
  | 'ERR_EXEC_PLUGIN_POLICY_INVALID'
  | 'ERR_EXEC_PLUGIN_DENIED'
>;

export type ExecError = CredentialsError<ExecErrorCode>;

export function execError(
  code: ExecErrorCode,
  message: string,
  options: { path?: string; hint?: string; cause?: unknown } = {},
): ExecError {
  return new CredentialsError(code, message, options);
}
