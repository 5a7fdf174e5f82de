/**
 * The one reader of JSON and YAML documents (providers files, ClusterProfiles, kubeconfigs, Identities, Tenants, the
 * issuer's records): one set of rules, so a document means the same wherever it is read, and errors that carry the
 * caller's code, name the source and never quote the input (documents hold tokens and keys), only line and column.
 *
 * - YAML 1.2, core schema (`yes` stays a string); mapping keys are strings and must be unique; YAML 1.1 tags
 *   (`!!binary`, `!!timestamp`...) are not resolved, so values are JSON values; merge keys (`<<`) are plain keys.
 * - Aliases expand at most {@link MAX_ALIAS_COUNT} nodes' worth: an alias bomb is refused, not expanded.
 * - At most `maxBytes` (default {@link DEFAULT_MAX_BYTES}); one document, a stream of several only when asked.
 * - JSON goes through JSON.parse, with unique keys too. `auto` reads text that starts with `{` or `[` as JSON (a
 *   YAML flow collection that is not JSON still parses as YAML) and anything else as YAML.
 *
 * Loads the `yaml` package when a text is read as YAML (JSON text never needs it): not for the plugins' cache-hit
 * path, and a token-request miss reading a JSON kubeconfig is faster and lighter without it.
 */
import { close, fstat, open } from 'node:fs';
import type { DocumentOptions, ParseOptions, SchemaOptions, ToJSOptions } from 'yaml';
import { readFdBounded } from './bounded-read.js';
import { CredentialsError, errno, jsonSyntaxProblem, type ErrorCode } from './errors.js';

export type DocumentFormat = 'json' | 'yaml' | 'auto';

/** What a document may be at most, unless the caller says otherwise. */
export const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;

/** How many nodes aliases may expand to (the `yaml` package's count): far above real documents, far below a bomb. */
export const MAX_ALIAS_COUNT = 100;

/**
 * The YAML options every reader uses, for the one parser that cannot use {@link parseDocument} (the exec plugin
 * output reader, which keeps client-go's messages).
 */
export const YAML_OPTIONS: Readonly<ParseOptions & DocumentOptions & SchemaOptions & ToJSOptions> = Object.freeze({
  version: '1.2',
  schema: 'core',
  resolveKnownTags: false,
  merge: false,
  uniqueKeys: true,
  stringKeys: true,
  strict: true,
  prettyErrors: false,
  maxAliasCount: MAX_ALIAS_COUNT,
  // No process warnings (an unknown tag is read as its plain value).
  logLevel: 'error',
});

export interface ParseDocumentOptions<Code extends ErrorCode = ErrorCode> {
  /** Where the text comes from (a file, `stdin`, a variable): the error's path, named in its message. */
  source: string;
  /** The caller's code for a text that is not a document. */
  code: Code;
  /** Default `auto`. */
  format?: DocumentFormat;
  /** Default {@link DEFAULT_MAX_BYTES}. */
  maxBytes?: number;
  /** How the error message starts, before `: <problem>`; default `<source> is not valid JSON|YAML`. */
  message?: string;
  hint?: string;
  /** Accept a stream of several YAML documents (the result is then their array). Default false. */
  multiple?: boolean;
}

/**
 * Parses one document (`multiple`: an array of them) with the rules above. A text that breaks them throws a
 * {@link CredentialsError} with `options.code`, path `options.source`, and a message that gives the problem by line
 * and column. An empty document is `null`.
 *
 * @example
 * ```ts
 * const doc = parseDocument(text, { source: file, code: 'ERR_PROFILE_PARSE' });
 * ```
 */
export function parseDocument(text: string, options: ParseDocumentOptions & { multiple: true }): unknown[];
export function parseDocument(text: string, options: ParseDocumentOptions): unknown;
export function parseDocument(text: string, options: ParseDocumentOptions): unknown {
  const format = options.format ?? 'auto';
  const fail = (problem: string, kind: 'JSON' | 'YAML' | undefined = formatName(format)): never => {
    const prefix = options.message ?? `${options.source} is not valid ${kind ?? 'JSON or YAML'}`;
    throw new CredentialsError(options.code, `${prefix}: ${problem}`, {
      path: options.source,
      ...(options.hint === undefined ? {} : { hint: options.hint }),
    });
  };
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  // A UTF-16 unit is at most 3 UTF-8 bytes: a short text needs no counting.
  if (text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes) {
    fail(`larger than ${maxBytes} bytes`, undefined);
  }
  if (format === 'json' || (format === 'auto' && /^\s*[[{]/.test(text))) {
    const json = parseJson(text);
    if (!('problem' in json)) return options.multiple === true ? [json.value] : json.value;
    if (format === 'json') fail(json.problem, 'JSON');
    // `{a: 1}` is YAML, not JSON; when YAML fails too, JSON was meant: its problem is the one to report.
    const yaml = parseYaml(text, options.multiple === true);
    if (!('problem' in yaml)) return yaml.value;
    fail(json.problem, 'JSON');
  }
  const yaml = parseYaml(text, options.multiple === true);
  if ('problem' in yaml) fail(yaml.problem, 'YAML');
  return (yaml as { value: unknown }).value;
}

function formatName(format: DocumentFormat): 'JSON' | 'YAML' | undefined {
  return format === 'json' ? 'JSON' : format === 'yaml' ? 'YAML' : undefined;
}

type Parsed = { value: unknown } | { problem: string };

function parseJson(text: string): Parsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: jsonSyntaxProblem(error) };
  }
  const duplicate = firstDuplicateKey(text);
  return duplicate === undefined ? { value } : { problem: `a duplicate key at ${position(text, duplicate)}` };
}

/**
 * The offset of the first key repeated in its object, in text JSON.parse accepted (so strings and brackets are
 * well-formed); undefined when keys are unique. JSON.parse keeps the last of duplicates silently.
 */
function firstDuplicateKey(text: string): number | undefined {
  const scopes: (Set<string> | undefined)[] = []; // a Set per open object, undefined per open array
  let keys: Set<string> | undefined;
  for (let at = 0; at < text.length; at += 1) {
    const char = text.charCodeAt(at);
    if (char === 0x22 /* " */) {
      let end = text.indexOf('"', at + 1);
      while (isEscaped(text, end)) end = text.indexOf('"', end + 1);
      if (keys !== undefined && text.charCodeAt(skipSpace(text, end + 1)) === 0x3a /* : */) {
        const raw = text.slice(at + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (keys.has(key)) return at;
        keys.add(key);
      }
      at = end;
    } else if (char === 0x7b /* { */) {
      keys = new Set();
      scopes.push(keys);
    } else if (char === 0x5b /* [ */) {
      keys = undefined;
      scopes.push(keys);
    } else if (char === 0x7d /* } */ || char === 0x5d /* ] */) {
      scopes.pop();
      keys = scopes[scopes.length - 1];
    }
  }
  return undefined;
}

/** The index of the first character at or after `index` that is not JSON whitespace. */
function skipSpace(text: string, index: number): number {
  let i = index;
  while (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t') i += 1;
  return i;
}

/** True when the quote at `index` is escaped (an odd number of backslashes before it). */
function isEscaped(text: string, index: number): boolean {
  let backslashes = 0;
  for (let i = index - 1; text[i] === '\\'; i -= 1) backslashes += 1;
  return backslashes % 2 === 1;
}

let yamlPackage: typeof import('yaml') | undefined;

/**
 * The `yaml` package, loaded on first use. `require` where there is one — a bundle, where esbuild bundles the
 * package and evaluates it only here — else (tsc's ES modules) a require of our own.
 */
function yaml(): typeof import('yaml') {
  yamlPackage ??= (
    typeof require === 'function'
      ? require('yaml')
      : process.getBuiltinModule('node:module').createRequire(import.meta.url)('yaml')
  ) as typeof import('yaml');
  return yamlPackage;
}

function parseYaml(text: string, multiple: boolean): Parsed {
  const { isScalar, parseAllDocuments } = yaml();
  let documents: ReturnType<typeof parseAllDocuments<import('yaml').ParsedNode, true>>;
  try {
    documents = parseAllDocuments(text, YAML_OPTIONS);
  } catch (error) {
    // The parser bounds nesting itself; anything else it throws is still not to be quoted.
    return { problem: error instanceof RangeError ? 'nested too deeply' : 'not parseable' };
  }
  // An empty document (a stray `---`, a file of comments) is none: `null` when nothing else is there.
  const all = [...documents];
  const empty = (contents: unknown): boolean =>
    contents === null || (isScalar(contents) && contents.value === null && contents.source === '');
  const list = all.filter((document) => !empty(document.contents));
  // An empty stream (no document) carries its errors itself.
  const errors =
    all.length > 0
      ? all.flatMap((document) => document.errors)
      : ((documents as { errors?: { code: string; pos: [number, number] }[] }).errors ?? []);
  if (errors.length > 0) {
    const error = errors[0]!;
    return { problem: `${YAML_PROBLEMS[error.code] ?? 'a syntax error'} at ${position(text, error.pos[0])}` };
  }
  if (!multiple && list.length > 1) {
    return {
      problem: `a stream of ${list.length} documents where one is expected (the second starts at ${position(text, list[1]!.range[0])})`,
    };
  }
  const values: unknown[] = [];
  for (const document of list) {
    try {
      values.push(document.toJS({ maxAliasCount: MAX_ALIAS_COUNT }));
    } catch (error) {
      const message = error instanceof Error ? error.message : '';
      return {
        problem: message.startsWith('Excessive alias count')
          ? `its aliases expand to more than ${MAX_ALIAS_COUNT} nodes (an alias bomb?)`
          : message.startsWith('Unresolved alias')
            ? 'an alias of an anchor that is not defined before it'
            : 'a value that cannot be read',
      };
    }
  }
  if (multiple) return { value: values };
  return { value: values[0] ?? null };
}

/** Phrases for the `yaml` package's error codes: its messages may quote the input (a tag, an escape, a key). */
const YAML_PROBLEMS: Readonly<Record<string, string>> = {
  ALIAS_PROPS: 'an alias with an anchor or a tag',
  BAD_ALIAS: 'a malformed alias',
  BAD_DIRECTIVE: 'a malformed directive',
  BAD_DQ_ESCAPE: 'an invalid escape in a double-quoted string',
  BAD_INDENT: 'bad indentation',
  BAD_PROP_ORDER: 'an anchor and a tag in the wrong order',
  BAD_SCALAR_START: 'a plain value starting with a reserved character',
  BLOCK_AS_IMPLICIT_KEY: 'a block collection as a key',
  BLOCK_IN_FLOW: 'a block collection inside a flow collection',
  DUPLICATE_KEY: 'a duplicate key',
  KEY_OVER_1024_CHARS: 'an implicit key longer than 1024 characters',
  MISSING_CHAR: 'a missing character (an unclosed quote or bracket?)',
  MULTILINE_IMPLICIT_KEY: 'an implicit key spanning lines',
  MULTIPLE_ANCHORS: 'two anchors on one node',
  MULTIPLE_DOCS: 'a second document',
  MULTIPLE_TAGS: 'two tags on one node',
  NON_STRING_KEY: 'a collection as a mapping key',
  RESOURCE_EXHAUSTION: 'nesting too deep',
  TAB_AS_INDENT: 'a tab as indentation',
  TAG_RESOLVE_FAILED: 'a value its tag does not fit',
  UNEXPECTED_TOKEN: 'an unexpected token',
  BAD_COLLECTION_TYPE: 'a collection of the wrong kind for its tag',
};

/** `line L, column C` (1-based) of `offset` in `text`. */
function position(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}

// --- Files ----------------------------------------------------------------------------------------------------------

/**
 * A file's text, read with a bound (`maxBytes`, default {@link DEFAULT_MAX_BYTES}): FIFOs and `/dev/stdin` work, a
 * device that never ends does not run the process out of memory. Throws the file system's error (with `code`) for
 * the caller to report: EISDIR for a directory, EFBIG for a file larger than the bound.
 */
export async function readDocumentText(file: string, maxBytes = DEFAULT_MAX_BYTES): Promise<string> {
  // The callback API, not node:fs/promises: loading that module (with readline, for FileHandle#readLines) is a
  // measurable part of a plugin's cache miss, which reads its kubeconfig here.
  const fd = await new Promise<number>((resolve, reject) =>
    open(file, 'r', (error, opened) => (error ? reject(error) : resolve(opened))),
  );
  try {
    const stats = await new Promise<import('node:fs').Stats>((resolve, reject) =>
      fstat(fd, (error, got) => (error ? reject(error) : resolve(got))),
    );
    if (stats.isDirectory()) {
      throw Object.assign(new Error(`EISDIR: ${file} is a directory, not a file`), { code: 'EISDIR', path: file });
    }
    return await readFdBounded(fd, file, maxBytes);
  } finally {
    await new Promise<void>((resolve) => close(fd, () => resolve()));
  }
}

/** Why a file could not be read, in words that name no content (the path is in the error's `path`). */
export function readProblem(error: unknown): string {
  switch (errno(error)) {
    case 'ENOENT':
      return 'no such file';
    case 'EISDIR':
      return 'it is a directory, not a file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    default:
      return error instanceof Error ? error.message : String(error);
  }
}

export interface ReadDocumentFileOptions<Code extends ErrorCode = ErrorCode>
  extends Omit<ParseDocumentOptions<Code>, 'source'> {
  /** The caller's code for a file that cannot be read; default `code`. */
  readCode?: ErrorCode;
  /** How a read error's message starts, before `: <reason>`; default `cannot read <file>`. */
  readMessage?: string;
  /** Hint of a read error. */
  readHint?: string;
}

/**
 * Reads and parses a document file ({@link parseDocument}, `source` = the file). A file that cannot be read (missing,
 * a directory, unreadable, too large) throws a {@link CredentialsError} with `readCode` naming the file.
 */
export async function readDocumentFile(
  file: string,
  options: ReadDocumentFileOptions & { multiple: true },
): Promise<unknown[]>;
export async function readDocumentFile(file: string, options: ReadDocumentFileOptions): Promise<unknown>;
export async function readDocumentFile(file: string, options: ReadDocumentFileOptions): Promise<unknown> {
  let text: string;
  try {
    text = await readDocumentText(file, options.maxBytes);
  } catch (cause) {
    throw new CredentialsError(
      options.readCode ?? options.code,
      `${options.readMessage ?? `cannot read ${file}`}: ${readProblem(cause)}`,
      {
        path: file,
        cause,
        ...(options.readHint === undefined ? {} : { hint: options.readHint }),
      },
    );
  }
  return parseDocument(text, { ...options, source: file });
}
