/**
 * HTTP/1.1 on the wire, for the one HTTP seam (`../http.ts`): the request head it writes and an incremental reader of
 * the answer — status line, header fields, and a body framed by Content-Length, the chunked transfer coding or the
 * end of the connection (RFC 9112). It is what the seam needs and no more: one request at a time on a connection (no
 * pipelining), no upgrades, request bodies of known length.
 *
 * Why not node:http: in a plugin's one-shot process, loading node:http and sending through its ClientRequest cost
 * more peak RSS and start-up than the exchange itself needs (a bare TLS request is lighter than the same request
 * through node:https; the miss targets are in docs/performance.md). Everything below HTTP — sockets, TLS, proxy tunnels,
 * deadlines — stays in the seam.
 */

/** The largest answer head (status line and header fields, and likewise a chunked body's trailer section). */
export const MAX_HEAD_BYTES = 16 * 1024;
/** The largest chunk-size line of a chunked body (the size and any extensions). */
const MAX_CHUNK_LINE_BYTES = 1024;

/** A request or answer that breaks HTTP/1.1; `code` says which way (`ERR_HTTP_INVALID_RESPONSE`, `ECONNRESET`...). */
export class WireError extends Error {
  override readonly name = 'WireError';
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Field values: visible characters, spaces, tabs and obs-text; never CR, LF or NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/**
 * A chunk's extensions (RFC 9112 §7.1.1): `;name`, `;name=` or `;name=value`, the value a token or a quoted string,
 * no blanks. Anything else (control characters, an unterminated quote, blanks) is refused, as llhttp refuses it.
 */
const CHUNK_EXTENSIONS =
  /^(?:;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:=(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*")?)?)*$/;
/** Strips the blanks HTTP allows around a field value (spaces and tabs: never a line break, unlike String#trim). */
const withoutBlanks = (value: string): string => value.replace(/^[ \t]+|[ \t]+$/g, '');

/**
 * The head of one request, `method target HTTP/1.1` and the fields in the order given. A field name that is not a
 * token, or a value with a line break or control character, is refused (it could end the head early and smuggle a
 * second request): the error names the field, never its value.
 */
export function requestHead(method: string, target: string, fields: Record<string, string>): string {
  if (!TOKEN.test(method))
    throw new WireError('ERR_INVALID_HTTP_TOKEN', `the method ${JSON.stringify(method)} is not an HTTP token`);
  if (!/^[\x21-\x7e]+$/.test(target))
    throw new WireError('ERR_UNESCAPED_CHARACTERS', 'the request target contains unescaped characters');
  let head = `${method} ${target} HTTP/1.1\r\n`;
  for (const [name, value] of Object.entries(fields)) {
    if (!TOKEN.test(name))
      throw new WireError('ERR_INVALID_HTTP_TOKEN', `the header name ${JSON.stringify(name)} is not an HTTP token`);
    if (!FIELD_VALUE.test(value))
      throw new WireError('ERR_INVALID_CHAR', `invalid character in the value of the header "${name}"`);
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}

export interface AnswerHead {
  status: number;
  /** Field names as sent and their values, alternating (as node's `rawHeaders`). */
  rawHeaders: string[];
}

export interface AnswerHandlers {
  /** The final head (interim 1xx answers are skipped), before any of the body. */
  onHead(head: AnswerHead): void;
  /** Each piece of the body as it arrives, transfer coding removed. May throw to stop reading. */
  onBody(chunk: Buffer): void;
}

type Framing = { kind: 'none' } | { kind: 'length'; left: number } | { kind: 'chunked' } | { kind: 'close' };
type State = 'head' | 'body' | 'chunk-size' | 'chunk-data' | 'chunk-end' | 'trailers' | 'done';

const invalid = (message: string): WireError => new WireError('ERR_HTTP_INVALID_RESPONSE', message);
const overflow = (what: string): WireError =>
  new WireError('ERR_HTTP_HEADER_OVERFLOW', `the answer's ${what} is larger than ${MAX_HEAD_BYTES} bytes`);

/**
 * The length of the answer head at the start of `bytes` (status line and fields, up to and with the blank line), or
 * undefined while it is incomplete. Throws when it is, or already is, longer than {@link MAX_HEAD_BYTES}.
 */
export function headLength(bytes: Buffer): number | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if ((end === -1 ? bytes.length : end + 4) > MAX_HEAD_BYTES) throw overflow('header');
  return end === -1 ? undefined : end + 4;
}

/** An HTTP/1.x status line's minor version and status code; undefined when `line` is not one. */
export function parseStatusLine(line: string): { minor: number; status: number } | undefined {
  const match = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/.exec(line);
  return match === null ? undefined : { minor: Number(match[1]), status: Number(match[2]) };
}

/**
 * Reads one answer from the bytes of a connection: {@link push} each chunk as it arrives, {@link end} when the
 * connection ends. Throws a {@link WireError} on a malformed answer; the connection is then unusable.
 */
export class AnswerReader {
  readonly #method: string;
  readonly #handlers: AnswerHandlers;
  #state: State = 'head';
  #buffered: Buffer = Buffer.alloc(0);
  #framing: Framing = { kind: 'none' };
  /** Bytes left of the current chunk. */
  #chunkLeft = 0;
  #trailerBytes = 0;
  #keepAlive = false;
  /** The server's `Keep-Alive: timeout=N`, in ms. */
  #idleMs: number | undefined;

  constructor(method: string, handlers: AnswerHandlers) {
    this.#method = method;
    this.#handlers = handlers;
  }

  /** Whether the whole answer has been read. */
  get done(): boolean {
    return this.#state === 'done';
  }

  /** Whether the connection may carry another request: the answer is complete, delimited, and nobody said close. */
  get reusable(): boolean {
    return this.#state === 'done' && this.#keepAlive && this.#framing.kind !== 'close' && this.#buffered.length === 0;
  }

  /** How long the server keeps an idle connection (its `Keep-Alive: timeout=`), if it said. */
  get idleMs(): number | undefined {
    return this.#idleMs;
  }

  /** Takes the next bytes; true once the answer is complete (bytes past it make the connection unusable). */
  push(bytes: Buffer): boolean {
    if (this.#state === 'done') {
      if (bytes.length > 0) this.#buffered = Buffer.concat([this.#buffered, bytes]);
      return true;
    }
    this.#buffered = this.#buffered.length === 0 ? bytes : Buffer.concat([this.#buffered, bytes]);
    while (!this.done && this.#step()) {
      // each step consumed something or changed state
    }
    return this.done;
  }

  /** The connection ended: completes an answer delimited by the end, or throws for one cut short. */
  end(): void {
    if (this.#state === 'done') return;
    if (this.#state === 'body' && this.#framing.kind === 'close') {
      this.#state = 'done';
      return;
    }
    throw new WireError(
      'ECONNRESET',
      this.#state === 'head' && this.#buffered.length === 0
        ? 'socket hang up'
        : 'the connection closed before the answer was complete',
    );
  }

  /** One step of the state machine; false when it needs more bytes. */
  #step(): boolean {
    switch (this.#state) {
      case 'head':
        return this.#readHead();
      case 'body':
        return this.#readBody();
      case 'chunk-size':
        return this.#readChunkSize();
      case 'chunk-data':
        return this.#readChunkData();
      case 'chunk-end':
        return this.#readChunkEnd();
      case 'trailers':
        return this.#readTrailers();
      default:
        return false;
    }
  }

  #take(length: number): Buffer {
    const taken = this.#buffered.subarray(0, length);
    this.#buffered = this.#buffered.subarray(length);
    return taken;
  }

  #readHead(): boolean {
    const length = headLength(this.#buffered);
    if (length === undefined) return false;
    const lines = this.#take(length).toString('latin1').slice(0, -4).split('\r\n');
    const statusLine = parseStatusLine(lines[0]!);
    if (statusLine === undefined) throw invalid('the answer does not start with an HTTP/1.x status line');
    const { status } = statusLine;
    const rawHeaders = parseFields(lines.slice(1));
    checkFraming(rawHeaders);
    if (status >= 100 && status < 200) {
      if (status === 101) throw invalid('the server switched protocols, which was not asked for');
      // HTTP/1.0 has no interim answers: llhttp reads one as the whole answer, and whatever follows as an error.
      if (statusLine.minor === 0) throw invalid('the answer is an interim (1xx) answer of HTTP/1.0');
      return true; // an interim answer (100 Continue, 103 Early Hints): the final one follows
    }
    this.#keepAlive = statusLine.minor === 1 && !hasToken(rawHeaders, 'connection', 'close');
    this.#framing = this.#framingOf(status, rawHeaders);
    const keepAlive = fieldValues(rawHeaders, 'keep-alive').join(',');
    const timeout = /(?:^|[,\s])timeout=(\d+)/i.exec(keepAlive);
    if (timeout !== null) this.#idleMs = Number(timeout[1]) * 1000;
    this.#handlers.onHead({ status, rawHeaders });
    this.#state = this.#framing.kind === 'chunked' ? 'chunk-size' : this.#framing.kind === 'none' ? 'done' : 'body';
    if (this.#framing.kind === 'length' && this.#framing.left === 0) this.#state = 'done';
    return true;
  }

  #framingOf(status: number, rawHeaders: string[]): Framing {
    if (this.#method === 'HEAD' || status === 204 || status === 304) return { kind: 'none' };
    const codings = fieldValues(rawHeaders, 'transfer-encoding');
    if (codings.length > 0) {
      // The last coding as written: `chunked,` ends with an empty one, so the body is not chunked (as for llhttp).
      const last = codings.join(',').split(',').at(-1)?.trim().toLowerCase();
      // A coding other than chunked last: the body runs to the end of the connection (RFC 9112 §6.3).
      if (last === 'chunked') return { kind: 'chunked' };
      return { kind: 'close' };
    }
    const [length] = fieldValues(rawHeaders, 'content-length');
    return length === undefined ? { kind: 'close' } : { kind: 'length', left: Number(length) };
  }

  #readBody(): boolean {
    if (this.#buffered.length === 0) return false;
    const framing = this.#framing;
    if (framing.kind === 'length') {
      const piece = this.#take(Math.min(framing.left, this.#buffered.length));
      framing.left -= piece.length;
      if (framing.left === 0) this.#state = 'done';
      this.#handlers.onBody(piece);
      return true;
    }
    this.#handlers.onBody(this.#take(this.#buffered.length));
    return false;
  }

  #readChunkSize(): boolean {
    const end = this.#buffered.indexOf('\r\n');
    if (end === -1) {
      if (this.#buffered.length > MAX_CHUNK_LINE_BYTES) throw invalid('a chunk-size line of the answer is too long');
      return false;
    }
    const line = this.#take(end + 2).toString('latin1', 0, end);
    const size = /^([0-9A-Fa-f]{1,12})(.*)$/.exec(line);
    if (size === null) throw invalid('the answer has an invalid chunk size');
    if (!CHUNK_EXTENSIONS.test(size[2]!)) throw invalid('the answer has an invalid chunk extension');
    this.#chunkLeft = Number.parseInt(size[1]!, 16);
    this.#state = this.#chunkLeft === 0 ? 'trailers' : 'chunk-data';
    return true;
  }

  #readChunkData(): boolean {
    if (this.#buffered.length === 0) return false;
    const piece = this.#take(Math.min(this.#chunkLeft, this.#buffered.length));
    this.#chunkLeft -= piece.length;
    if (this.#chunkLeft === 0) this.#state = 'chunk-end';
    this.#handlers.onBody(piece);
    return true;
  }

  #readChunkEnd(): boolean {
    if (this.#buffered.length < 2) return false;
    if (this.#buffered[0] !== 0x0d || this.#buffered[1] !== 0x0a)
      throw invalid('a chunk of the answer is longer than its size');
    this.#take(2);
    this.#state = 'chunk-size';
    return true;
  }

  /** The trailer section after the last chunk: fields checked as header fields are, then dropped, up to the empty line. */
  #readTrailers(): boolean {
    const end = this.#buffered.indexOf('\r\n');
    if (end === -1) {
      if (this.#trailerBytes + this.#buffered.length > MAX_HEAD_BYTES) throw overflow('trailer section');
      return false;
    }
    this.#trailerBytes += end + 2;
    if (this.#trailerBytes > MAX_HEAD_BYTES) throw overflow('trailer section');
    const line = this.#take(end + 2).toString('latin1', 0, end);
    if (end === 0) this.#state = 'done';
    else parseFields([line]);
    return true;
  }
}

/**
 * The framing fields as llhttp checks them, on every answer whatever its status: at most one Content-Length, of
 * digits only; no Transfer-Encoding without a coding; never both (a message framed two ways is how requests are
 * smuggled, RFC 9112 §6.1).
 */
function checkFraming(rawHeaders: readonly string[]): void {
  const lengths = fieldValues(rawHeaders, 'content-length');
  if (lengths.length > 1) throw invalid('the answer has more than one Content-Length');
  if (lengths.length === 1 && !/^\d{1,15}$/.test(lengths[0]!))
    throw invalid('the answer has an invalid Content-Length');
  const codings = fieldValues(rawHeaders, 'transfer-encoding');
  if (codings.some((value) => value === '')) throw invalid('the answer has an empty Transfer-Encoding');
  if (codings.length > 0 && lengths.length > 0)
    throw invalid('the answer has both Content-Length and Transfer-Encoding');
}

/**
 * Header field lines into [name, value, ...]. An obsolete line folding (RFC 9112 §5.2) is refused, as llhttp refuses
 * it: a server that folds is either very old or trying to make two readers see two different fields.
 */
function parseFields(lines: string[]): string[] {
  const raw: string[] = [];
  for (const line of lines) {
    if (line.startsWith(' ') || line.startsWith('\t'))
      throw invalid("the answer's header has a folded line (obs-fold)");
    const colon = line.indexOf(':');
    const name = colon === -1 ? '' : line.slice(0, colon);
    if (!TOKEN.test(name)) throw invalid('the answer has a malformed header field');
    const value = withoutBlanks(line.slice(colon + 1));
    if (!FIELD_VALUE.test(value)) throw invalid(`the answer's header field "${name}" has an invalid character`);
    raw.push(name, value);
  }
  return raw;
}

function fieldValues(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let index = 0; index + 1 < rawHeaders.length; index += 2) {
    if (rawHeaders[index]!.toLowerCase() === name) values.push(rawHeaders[index + 1]!);
  }
  return values;
}

function hasToken(rawHeaders: readonly string[], name: string, token: string): boolean {
  return fieldValues(rawHeaders, name).some((value) =>
    value.split(',').some((part) => part.trim().toLowerCase() === token),
  );
}
