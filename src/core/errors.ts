/**
 * Errors with stable codes.
 *
 * Every error this package raises for a user-visible failure is a {@link CredentialsError} whose `code` is a
 * stable string (match on `error.code`, never on `instanceof` or the message: two copies of the package can live
 * in one process). `path` says where the problem is: a JSON path (`$.providers[0].execConfig`), a file or a flag.
 * Lower-level errors (undici, client-node, ajv, node:fs) are translated at the boundary and kept as `cause`.
 *
 * Each area declares its own union of codes next to the code that raises them; all start with `ERR_`.
 */
export class CredentialsError<Code extends string = string> extends Error {
  override readonly name = 'CredentialsError';
  readonly code: Code;
  /** Where the problem is: a JSON path, a file, a flag or a URL. */
  readonly path: string | undefined;
  /** What a user can do about it. */
  readonly hint: string | undefined;

  constructor(code: Code, message: string, options: { path?: string; hint?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.path = options.path;
    this.hint = options.hint;
  }
}

/** True for a {@link CredentialsError} from any copy of this package. */
export function isCredentialsError(error: unknown): error is CredentialsError {
  return (
    error instanceof Error &&
    (error as { name?: unknown }).name === 'CredentialsError' &&
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

/** The `code` of a Node system error (`ENOENT`, `EACCES`...), or undefined. */
export function errno(error: unknown): string | undefined {
  return (error as { code?: unknown } | null)?.code as string | undefined;
}
