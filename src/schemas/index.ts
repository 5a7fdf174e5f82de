/**
 * Validation of the wire formats against the JSON Schemas in `schemas/` (the single source of truth for every document
 * that crosses a process or file boundary). The schemas are precompiled at build time (scripts/compile-schemas.mjs,
 * ajv standalone code): nothing is compiled at run time and no part of ajv is loaded. This module holds every schema
 * (~180 KB of generated code); a caller that needs one schema on a hot path uses ./issues.ts with
 * src/generated/validator.<id>.ts instead.
 *
 * Problems are reported as {@link SchemaIssue}s whose `path` is a JSON path into the document (`$`,
 * `$.providers[0].execConfig.command`, `$.status.accessProviders[1].cluster['proxy-url']`).
 *
 * @example
 * ```ts
 * const issues = validateDocument('providers-file', JSON.parse(text));
 * const config = assertDocument<AccessConfig>('providers-file', JSON.parse(text), {
 *   code: 'ERR_ACCESS_CONFIG_INVALID',
 *   what: `providers file ${path}`,
 * });
 * ```
 */
import type { ErrorCode } from '../base/errors.js';
import * as all from '../generated/validators.js';
import type { SchemaId } from '../generated/validators.js';
import { assertWith, validateWith, type SchemaIssue } from './issues.js';

/** The base name of a file `schemas/<id>.schema.json`, e.g. `'providers-file'` or `'execcredential-output.v1'`. */
export type { SchemaId } from '../generated/validators.js';
export type { SchemaIssue } from './issues.js';

/**
 * Validates `doc` against the schema `schemas/<id>.schema.json`. Returns no issues when it is valid. Never throws
 * for any `doc`; throws a TypeError for an unknown `id` (a programming error).
 *
 * @example
 * ```ts
 * validateDocument('execcredential-output.v1', { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' });
 * // [{ path: '$.status', message: "exec plugin didn't return a status field" }]
 * ```
 */
export function validateDocument(id: SchemaId, doc: unknown): readonly SchemaIssue[] {
  return validateWith(all, id, doc);
}

/**
 * Returns `doc` typed as `T` when it is valid against `schemas/<id>.schema.json`; otherwise throws a
 * CredentialsError with the given `code`, the message `<what> is invalid: <path>: <message>` (followed by
 * the further issues) and `path` = the first issue's path.
 *
 * @example
 * ```ts
 * const output = assertDocument<{ status: ExecCredentialStatus }>('execcredential-output.v1', parsed, {
 *   code: 'ERR_EXEC_OUTPUT_INVALID',
 *   what: 'the exec plugin output',
 * });
 * ```
 */
export function assertDocument<T>(id: SchemaId, doc: unknown, options: { code: ErrorCode; what: string }): T {
  return assertWith<T, SchemaId>(all, id, doc, options);
}
