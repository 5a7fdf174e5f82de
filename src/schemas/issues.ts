/**
 * How a document's problems are found and worded, with any generated validator module: {@link validateWith} and
 * {@link assertWith} take the module (src/generated/validators.ts with every schema, through ./index.ts, or
 * src/generated/validator.<id>.ts with one, for a caller that must not load the other schemas: a plugin's cache miss).
 *
 * Problems are reported as {@link SchemaIssue}s whose `path` is a JSON path into the document (`$`,
 * `$.providers[0].execConfig.command`, `$.status.accessProviders[1].cluster['proxy-url']`).
 *
 * @example
 * ```ts
 * const schema = await import('../generated/validator.oidc-config.js');
 * const issues = validateWith(schema, 'oidc-config', config);
 * ```
 */
import { CredentialsError, type ErrorCode } from '../base/errors.js';
import type { CompiledValidator, ValidatorError } from './runtime.js';

/** `x-messages` of one schema, by the JSON pointer of the schema object that holds it. */
type SchemaMessages = Readonly<Record<string, Readonly<Record<string, string | Readonly<Record<string, string>>>>>>;

/**
 * A generated validator module: src/generated/validators.ts (every schema) or src/generated/validator.<id>.ts (one).
 */
export interface SchemaModule<Id extends string> {
  readonly validators: { readonly [K in Id]: CompiledValidator };
  readonly messages: { readonly [K in Id]: SchemaMessages };
}

/** One reason a document is invalid. */
export interface SchemaIssue {
  /** JSON path of the offending value (for a missing or unknown property: of that property). */
  path: string;
  /** What is wrong, for a human. */
  message: string;
}

const noIssues: readonly SchemaIssue[] = Object.freeze([]);

/** How many issues {@link assertWith} spells out in its message. */
const issuesInMessage = 5;

/**
 * Validates `doc` against the schema `schemas/<id>.schema.json`, compiled into `schema`. Returns no issues when it is
 * valid. Never throws for any `doc`; throws a TypeError for an id the module does not hold (a programming error).
 */
export function validateWith<Id extends string>(
  schema: SchemaModule<Id>,
  id: Id,
  doc: unknown,
): readonly SchemaIssue[] {
  const validate = Object.hasOwn(schema.validators, id) ? schema.validators[id] : undefined;
  if (validate === undefined) {
    throw new TypeError(`unknown schema id ${JSON.stringify(id)}`);
  }
  if (validate(doc)) {
    return noIssues;
  }
  return Object.freeze(toIssues(schema.messages[id], doc, validate.errors ?? []));
}

/**
 * Returns `doc` typed as `T` when it is valid against `schemas/<id>.schema.json`; otherwise throws a
 * {@link CredentialsError} with the given `code`, the message `<what> is invalid: <path>: <message>` (followed by
 * the further issues) and `path` = the first issue's path.
 */
export function assertWith<T, Id extends string>(
  schema: SchemaModule<Id>,
  id: Id,
  doc: unknown,
  options: { code: ErrorCode; what: string },
): T {
  const issues = validateWith(schema, id, doc);
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

function toIssues(messages: SchemaMessages, doc: unknown, errors: readonly ValidatorError[]): SchemaIssue[] {
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
    const issue = toIssue(messages, doc, error);
    const key = `${issue.path}\n${issue.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      issues.push(issue);
    }
  }
  return issues;
}

function toIssue(messages: SchemaMessages, doc: unknown, error: ValidatorError): SchemaIssue {
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
  return { path, message: customMessage(messages, error) ?? defaultMessage(error, value) };
}

/** The schema's own `x-messages` text for this error, if it has one. */
function customMessage(messages: SchemaMessages, error: ValidatorError): string | undefined {
  const cut = error.schemaPath.lastIndexOf('/');
  const node = messages[error.schemaPath.slice(0, cut)];
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
