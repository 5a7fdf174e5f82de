/**
 * Errors with stable codes.
 *
 * Every error this package raises for a user-visible failure is a {@link CredentialsError} whose `code` is one of
 * ./error-registry.ts (match on `error.code`, never on the message). `path` says where the problem is: a JSON path
 * (`$.providers[0].execConfig`), a file or a flag. Lower-level errors (the HTTP seam's `HttpFailure`, client-node,
 * ajv, node:fs) are translated at the boundary and kept as `cause`. Recognise the error with
 * {@link isCredentialsError}, never with `instanceof`: two copies of the package can live in one process.
 */
import { ERRORS, type ErrorCode, type ErrorSpec } from './error-registry.js';

export type { ErrorCode, ErrorSpec } from './error-registry.js';
export type { ErrorArea } from './error-docs.js';
export { ERRORS } from './error-registry.js';

/** A documented subset of {@link ErrorCode}: every member must be a registered code. */
export type ErrorCodes<T extends ErrorCode> = T;

/** The brand every copy of the package puts on its errors (a registered symbol, so copies share it). */
const BRAND = Symbol.for('clusterprofile-credentials.error');

/** The registry entry of `code`; undefined for a code from elsewhere (a newer copy, a provider's own, the wire). */
export function errorSpec(code: string): ErrorSpec | undefined {
  return Object.hasOwn(ERRORS, code) ? (ERRORS as Readonly<Record<string, ErrorSpec>>)[code] : undefined;
}

/** The error of every user-visible failure: a stable `code` to match on, where it is (`path`), what to do (`hint`). */
export class CredentialsError<C extends ErrorCode = ErrorCode> extends Error {
  override readonly name = 'CredentialsError';
  readonly code: C;
  // `declare`: own properties only when set, so that Node's printout of an uncaught error shows no `hint: undefined`.
  /** Where the problem is: a JSON path, a file, a flag or a URL. */
  declare readonly path: string | undefined;
  /** What a user can do about it. */
  declare readonly hint: string | undefined;

  constructor(code: C, message: string, options: { path?: string; hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.path !== undefined) (this as { path: string }).path = options.path;
    if (options.hint !== undefined) (this as { hint: string }).hint = options.hint;
  }

  /** The brand {@link isCredentialsError} checks (on the prototype: not an own property of the instance). */
  get [BRAND](): true {
    return true;
  }

  /**
   * The exit code of a binary that ends with this error: 2 when the user must change input, else 1; undefined for a
   * code outside the registry (the plugin runtime then exits 2 from a provider's settings, else 1).
   */
  get exitCode(): 1 | 2 | undefined {
    return errorSpec(this.code)?.exit;
  }

  /** Whether the same call may succeed later unchanged (false for a code outside the registry). */
  get retryable(): boolean {
    return errorSpec(this.code)?.retryable ?? false;
  }

  /** The status the tenant-cert issuer answers this code with, when it sends it. */
  get httpStatus(): number | undefined {
    return errorSpec(this.code)?.http;
  }
}

/** True for a {@link CredentialsError} from any copy of this package (the shared brand and a string code). */
export function isCredentialsError(error: unknown): error is CredentialsError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { [BRAND]?: unknown })[BRAND] === true &&
    typeof (error as { code?: unknown }).code === 'string'
  );
}

/** One line for a human: `message (at path)` plus the hint, without a stack. */
export function formatError(error: unknown): string {
  if (isCredentialsError(error)) {
    const where = error.path === undefined ? '' : ` (at ${error.path})`;
    const hint = error.hint === undefined ? '' : `\nhint: ${error.hint}`;
    return `${error.code}: ${error.message}${where}${hint}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/**
 * A `JSON.parse` failure in words that quote nothing of the input. V8 puts an excerpt of the text around an
 * unexpected token in the message (`Unexpected token 's', ..."value":s3cr3t-Val"... is not valid JSON`), and what we
 * parse (providers files, KUBERNETES_EXEC_INFO, server answers) can hold secrets; messages that only give a position
 * are kept.
 */
export function jsonSyntaxProblem(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.endsWith(' is not valid JSON') ? 'an unexpected character: not valid JSON' : message;
}

/**
 * A URL (or something meant to be one) for a message, with any `user:password@` replaced by `***@`: proxy and
 * server URLs may carry credentials, and a URL we refuse is quoted back to the user.
 */
export function withoutUserinfo(url: string): string {
  return url.replace(/(^|\/\/)[^/@\s]*@/g, '$1***@');
}

/** The most characters of one value a message quotes: enough to recognise it, never a 100 KB field echoed back. */
export const QUOTE_LIMIT = 200;

/**
 * `text` cut to `limit` characters (a split surrogate pair dropped) with `…` and the full length appended when longer:
 * for a value shown as it is (a path, a URL after "at").
 */
export function clip(text: string, limit = QUOTE_LIMIT): string {
  if (text.length <= limit) return text;
  const end = /[\ud800-\udbff]/.test(text.charAt(limit - 1)) ? limit - 1 : limit;
  return `${text.slice(0, end)}… (${text.length} characters)`;
}

/**
 * A value for a message, the one place where input is quoted back: JSON text (a string in quotes, control
 * characters escaped), at most {@link QUOTE_LIMIT} characters of it, then `…` and the full length. Values from a
 * ClusterProfile, KUBERNETES_EXEC_INFO or a file can be any size; quote them with this, never `JSON.stringify`.
 */
export function quote(value: unknown, limit = QUOTE_LIMIT): string {
  if (typeof value === 'string') {
    if (value.length <= limit) return JSON.stringify(value);
    const end = /[\ud800-\udbff]/.test(value.charAt(limit - 1)) ? limit - 1 : limit;
    return `${JSON.stringify(`${value.slice(0, end)}…`)} (${value.length} characters)`;
  }
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return clip(text, limit);
}

/**
 * One URL (or a value meant to be one) with its userinfo replaced by `***`, however it is written. A URL that parses
 * loses exactly its username and password; a text that does not parse (a password holding `/` or a space, a bad port)
 * loses everything between `//` (or its start) and its last `@`, which may hide more than the userinfo but never
 * less (so does a value without a host, such as `user:pw@host`). For free text holding URLs, see {@link withoutUserinfo}.
 */
export function redactUrl(url: string): string {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed !== undefined && (parsed.username !== '' || parsed.password !== '')) {
    parsed.username = '';
    parsed.password = '';
    return parsed.href.replace('//', '//***@');
  }
  // A URL with a host and no userinfo is shown as it is; anything else holding an "@" (`user:pw@host` parses as
  // scheme `user:`) is cut like a text that does not parse.
  if (parsed !== undefined && parsed.host !== '') return url;
  const at = url.lastIndexOf('@');
  if (at < 0) return url;
  const slashes = url.indexOf('//');
  const start = slashes >= 0 && slashes < at ? slashes + 2 : 0;
  return `${url.slice(0, start)}***${url.slice(at)}`;
}

/** {@link quote} of {@link redactUrl}: how a message shows a URL it refuses. */
export function quoteUrl(url: string): string {
  return quote(redactUrl(url));
}

/** The `code` of a Node system error (`ENOENT`, `EACCES`...), or undefined. */
export function errno(error: unknown): string | undefined {
  return (error as { code?: unknown } | null)?.code as string | undefined;
}
