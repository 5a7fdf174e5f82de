export { ExecAuthenticator, ExecCredentialCache, execCacheKey, DEFAULT_REFRESH_MARGIN_MS } from './authenticator.js';
export type { ExecAuthenticatorOptions, ExecRun } from './authenticator.js';
export type { ExecErrorCode, ExecError } from './errors.js';
export { parseExecCredential } from './output.js';
export type { ExecCredential } from './output.js';
export { buildExecRequest, execDepth, EXEC_DEPTH_ENV, DEFAULT_MAX_EXEC_DEPTH } from './request.js';
export type { ExecRequest, ExecRequestOptions } from './request.js';
export { runExecPlugin, spawnExecRequest, DEFAULT_EXEC_TIMEOUT_MS } from './runner.js';
export type { ExecRunOptions } from './runner.js';
