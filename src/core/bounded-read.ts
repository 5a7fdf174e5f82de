/**
 * Reading to the end with a bound: a file descriptor (synchronously or not) or a stream, refusing more than
 * `maxBytes` with an EFBIG error, so that a device that never ends, a huge file or a flood on standard input cannot
 * run the process out of memory. The one loop under the private-file and lock readers, the document reader and the
 * CLI's standard input.
 *
 * node:fs comes from process.getBuiltinModule when a read is made, not on import: the plugin's cache-hit path reads
 * its entry through here (see `private-files/privacy.ts`).
 */

/** A read from a file takes at most this much at a time. */
const CHUNK_BYTES = 64 * 1024;

/** The error for more than `maxBytes` of `what` (a file's path, or e.g. `standard input`): code EFBIG. */
export function tooLarge(what: string, maxBytes: number, path?: string): Error {
  return Object.assign(
    new Error(`EFBIG: ${what} is larger than ${maxBytes} bytes`),
    path === undefined ? { code: 'EFBIG' } : { code: 'EFBIG', path },
  );
}

/** The chunks of one read so far; adding one past the bound throws {@link tooLarge}. */
class Collected {
  readonly #chunks: Buffer[] = [];
  #size = 0;
  readonly #maxBytes: number;
  readonly #what: string;
  readonly #path: string | undefined;

  constructor(maxBytes: number, what: string, path: string | undefined) {
    this.#maxBytes = maxBytes;
    this.#what = what;
    this.#path = path;
  }

  /** A buffer for the next read from a file: one byte past the bound at most, to tell a file at it from one over. */
  nextBuffer(): Buffer {
    return Buffer.allocUnsafe(Math.min(CHUNK_BYTES, this.#maxBytes + 1 - this.#size));
  }

  add(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size > this.#maxBytes) throw tooLarge(this.#what, this.#maxBytes, this.#path);
  }

  text(): string {
    return Buffer.concat(this.#chunks, this.#size).toString('utf8');
  }
}

/** Reads `fd` to its end as UTF-8, refusing more than `maxBytes` (an EFBIG error naming `file`). */
export function readFdBoundedSync(fd: number, file: string, maxBytes: number): string {
  const { readSync } = process.getBuiltinModule('node:fs');
  const collected = new Collected(maxBytes, file, file);
  for (;;) {
    const chunk = collected.nextBuffer();
    const count = readSync(fd, chunk, 0, chunk.length, null);
    if (count === 0) break;
    collected.add(chunk.subarray(0, count));
  }
  return collected.text();
}

/**
 * {@link readFdBoundedSync} without blocking: node:fs's callback API (not node:fs/promises, whose loading is a
 * measurable part of a plugin's cache miss).
 */
export async function readFdBounded(fd: number, file: string, maxBytes: number): Promise<string> {
  const { read } = process.getBuiltinModule('node:fs');
  const collected = new Collected(maxBytes, file, file);
  for (;;) {
    const chunk = collected.nextBuffer();
    const count = await new Promise<number>((resolve, reject) =>
      read(fd, chunk, 0, chunk.length, null, (error, bytes) => (error ? reject(error) : resolve(bytes))),
    );
    if (count === 0) break;
    collected.add(chunk.subarray(0, count));
  }
  return collected.text();
}

/** Reads a stream to its end as UTF-8, refusing more than `maxBytes` (an EFBIG error naming `what`, no path). */
export async function readStreamBounded(
  stream: AsyncIterable<unknown>,
  what: string,
  maxBytes: number,
): Promise<string> {
  const collected = new Collected(maxBytes, what, undefined);
  for await (const chunk of stream) collected.add(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return collected.text();
}
