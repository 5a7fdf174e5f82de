/**
 * Reading to the end with a bound: a file descriptor (synchronously or not) or a stream, refusing more than
 * `maxBytes` with an EFBIG error, so that a device that never ends, a huge file or a flood on standard input cannot
 * run the process out of memory. The one home of this loop, for the private-file and lock readers, the document
 * reader and the CLI's standard input.
 *
 * Each form is a plain loop, not one loop behind a shared abstraction: the synchronous one is on the plugin's
 * cache-hit path, which is counted in bytes (test/integration/plugin-runtime.test.ts). A read from a file takes 64 KiB
 * at most, or one byte past the bound when that is less (to tell a file at the bound from one over it). node:fs comes
 * from process.getBuiltinModule when a read is made, not on import.
 */

/** The error for more than `maxBytes` of `what` (a file's path, or e.g. `standard input`): code EFBIG. */
export function tooLarge(what: string, maxBytes: number, path?: string): Error {
  return Object.assign(
    new Error(`EFBIG: ${what} is larger than ${maxBytes} bytes`),
    path === undefined ? { code: 'EFBIG' } : { code: 'EFBIG', path },
  );
}

/** Reads `fd` to its end as UTF-8, refusing more than `maxBytes` (an EFBIG error naming `file`). */
export function readFdBoundedSync(fd: number, file: string, maxBytes: number): string {
  const { readSync } = process.getBuiltinModule('node:fs');
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(65_536, maxBytes + 1 - size));
    const count = readSync(fd, chunk, 0, chunk.length, null);
    if (count === 0) break;
    chunks.push(chunk.subarray(0, count));
    size += count;
    if (size > maxBytes) throw tooLarge(file, maxBytes, file);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/**
 * {@link readFdBoundedSync} without blocking: node:fs's callback API (not node:fs/promises, whose loading is a
 * measurable part of a plugin's cache miss).
 */
export async function readFdBounded(fd: number, file: string, maxBytes: number): Promise<string> {
  const { read } = process.getBuiltinModule('node:fs');
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(65_536, maxBytes + 1 - size));
    const count = await new Promise<number>((resolve, reject) =>
      read(fd, chunk, 0, chunk.length, null, (error, bytes) => (error ? reject(error) : resolve(bytes))),
    );
    if (count === 0) break;
    chunks.push(chunk.subarray(0, count));
    size += count;
    if (size > maxBytes) throw tooLarge(file, maxBytes, file);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Reads a stream to its end as UTF-8, refusing more than `maxBytes` (an EFBIG error naming `what`, no path). */
export async function readStreamBounded(
  stream: AsyncIterable<unknown>,
  what: string,
  maxBytes: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const piece of stream) {
    const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(String(piece));
    chunks.push(chunk);
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(what, maxBytes);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
