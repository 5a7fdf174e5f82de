/**
 * Validation of the wire formats against the JSON Schemas in `schemas/` (the single source of truth for every document
 * that crosses a process or file boundary). The schemas are precompiled at build time (scripts/compile-schemas.mjs,
 * ajv standalone code): nothing is compiled at run time and no part of ajv is loaded.
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
import { CredentialsError, type ErrorCode } from '../core/errors.js';
import { messages, validators } from '../generated/validators.js';
import type { SchemaId } from '../generated/validators.js';
import type { ValidatorError } from './runtime.js';

/** The base name of a file `schemas/<id>.schema.json`, e.g. `'providers-file'` or `'execcredential-output.v1'`. */
export type { SchemaId } from '../generated/validators.js';

/** One reason a document is invalid. */
export interface SchemaIssue {
  /** JSON path of the offending value (for a missing or unknown property: of that property). */
  path: string;
  /** What is wrong, for a human. */
  message: string;
}

const noIssues: readonly SchemaIssue[] = Object.freeze([]);

/** How many issues {@link assertDocument} spells out in its message. */
const issuesInMessage = 5;

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
  const validate = Object.hasOwn(validators, id) ? validators[id] : undefined;
  if (validate === undefined) {
    throw new TypeError(`unknown schema id ${JSON.stringify(id)}`);
  }
  if (validate(doc)) {
    return noIssues;
  }
  return Object.freeze(toIssues(id, doc, validate.errors ?? []));
}

/**
 * Returns `doc` typed as `T` when it is valid against `schemas/<id>.schema.json`; otherwise throws a
 * {@link CredentialsError} with the given `code`, the message `<what> is invalid: <path>: <message>` (followed by
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
  const issues = validateDocument(id, doc);
  const first = issues[0];
  if (first === undefined) {
    return doc as T;
  }
  const shown = issues.slice(0, issuesInMessage).map((issue) => `${issue.path}: ${issue.message}`);
  const more = issues.length > issuesInMessage ? `; and ${issues.length - issuesInMessage} more` : '';
  throw new CredentialsError(options.code, `${options.what} is invalid: ${shown.join('; ')}${more}`, {
    path: first.path,
  });
}

function toIssues(id: SchemaId, doc: unknown, errors: readonly ValidatorError[]): SchemaIssue[] {
  // A failing anyOf/oneOf also reports why each branch failed: keep only the one issue about the whole.
  const composites = errors
    .filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf')
    .map((error) => `${error.schemaPath}/`);
  const relevant = errors.filter(
    (error) =>
      error.keyword !== 'if' &&
      error.keyword !== 'propertyNames' &&
      !composites.some((prefix) => error.schemaPath.startsWith(prefix)),
  );
  const issues: SchemaIssue[] = [];
  const seen = new Set<string>();
  for (const error of relevant) {
    const issue = toIssue(id, doc, error);
    const key = `${issue.path}\n${issue.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      issues.push(issue);
    }
  }
  return issues;
}

function toIssue(id: SchemaId, doc: unknown, error: ValidatorError): SchemaIssue {
  const { path: parentPath, value } = locate(doc, error.instancePath);
  const params = error.params;
  const child =
    stringParam(params, 'missingProperty') ??
    stringParam(params, 'additionalProperty') ??
    stringParam(params, 'unevaluatedProperty') ??
    stringParam(error as unknown as Record<string, unknown>, 'propertyName');
  if (error.keyword === 'x-kubernetes-list-map-keys') {
    // Point at the second item of the pair.
    const keys = (params['keys'] as string[]).join(', ');
    return {
      path: `${parentPath}[${String(params['duplicate'])}]`,
      message: `has the same ${keys} as ${parentPath}[${String(params['first'])}] (the list is keyed by ${keys})`,
    };
  }
  const path = child === undefined ? parentPath : `${parentPath}${memberSegment(child)}`;
  return { path, message: customMessage(id, error) ?? defaultMessage(error, value) };
}

/** The schema's own `x-messages` text for this error, if it has one. */
function customMessage(id: SchemaId, error: ValidatorError): string | undefined {
  const cut = error.schemaPath.lastIndexOf('/');
  const node = messages[id][error.schemaPath.slice(0, cut)];
  const entry = node?.[error.schemaPath.slice(cut + 1)];
  if (typeof entry === 'string') {
    return entry;
  }
  const missing = stringParam(error.params, 'missingProperty');
  return entry !== undefined && missing !== undefined ? entry[missing] : undefined;
}

function defaultMessage(error: ValidatorError, value: unknown): string {
  const params = error.params;
  const limit = Number(params['limit']);
  switch (error.keyword) {
    case 'required':
    case 'dependentRequired':
      return stringParam(params, 'property') === undefined
        ? 'is required'
        : `is required when ${String(params['property'])} is set`;
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return 'is not a known property here';
    case 'type': {
      const types = Array.isArray(params['type']) ? (params['type'] as string[]) : String(params['type']).split(',');
      return `must be ${types.map(describeType).join(' or ')}, not ${describeValue(value)}`;
    }
    case 'const':
      return `must be ${JSON.stringify(params['allowedValue'])}${got(value)}`;
    case 'enum':
      return `must be one of ${(params['allowedValues'] as unknown[]).map((item) => JSON.stringify(item)).join(', ')}${got(value)}`;
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `must be at least ${limit} characters long`;
    case 'maxLength':
      return `must be at most ${limit} characters long${typeof value === 'string' ? ` (it has ${value.length})` : ''}`;
    case 'minItems':
      return limit === 1 ? 'must not be empty' : `must have at least ${limit} items`;
    case 'maxItems':
      return `must have at most ${limit} items${Array.isArray(value) ? ` (it has ${value.length})` : ''}`;
    case 'minProperties':
      return limit === 1 ? 'must not be empty' : `must have at least ${limit} properties`;
    case 'maxProperties':
      return `must have at most ${limit} properties`;
    case 'pattern':
      return `does not have the expected form (pattern ${String(params['pattern'])})`;
    case 'format':
      return params['format'] === 'date-time'
        ? 'must be an RFC 3339 date-time such as 2026-01-02T15:04:05Z'
        : `must be a valid ${String(params['format'])}`;
    case 'uniqueItems':
      return `must not contain duplicates (items ${String(params['j'])} and ${String(params['i'])} are equal)`;
    case 'anyOf':
    case 'oneOf':
      return 'does not match any of the allowed forms';
    case 'not':
      return 'is not allowed in this form';
    default:
      return error.message ?? `fails the schema keyword ${error.keyword}`;
  }
}

function describeType(type: string): string {
  switch (type) {
    case 'object':
    case 'array':
    case 'integer':
      return `an ${type}`;
    case 'null':
      return 'null';
    default:
      return `a ${type}`;
  }
}

function describeValue(value: unknown): string {
  if (value === null) {
    return 'null';
  }
  if (Array.isArray(value)) {
    return 'an array';
  }
  return describeType(typeof value);
}

/** ` (got "x")` for short scalar values, to help spot a typo. */
function got(value: unknown): string {
  const text = JSON.stringify(value);
  return value !== null && typeof value !== 'object' && text !== undefined && text.length <= 80 ? ` (got ${text})` : '';
}

function stringParam(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  return typeof value === 'string' ? value : undefined;
}

/** The JSON path of the value at a JSON pointer, and that value. */
function locate(doc: unknown, pointer: string): { path: string; value: unknown } {
  let path = '$';
  let value = doc;
  if (pointer === '') {
    return { path, value };
  }
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(value) && /^(0|[1-9]\d*)$/.test(segment)) {
      path += `[${segment}]`;
      value = value[Number(segment)];
    } else {
      path += memberSegment(segment);
      value =
        value !== null && typeof value === 'object' && Object.hasOwn(value, segment)
          ? (value as Record<string, unknown>)[segment]
          : undefined;
    }
  }
  return { path, value };
}

/** `.name` for identifiers, `['tls-server-name']` otherwise (RFC 9535 normalized-path quoting). */
function memberSegment(name: string): string {
  if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
    return `.${name}`;
  }
  return `['${name.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}']`;
}
