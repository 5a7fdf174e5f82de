/**
 * A command's document argument: a file, or standard input for `-` (yargs hands a lone `-` over as an empty string,
 * and an omitted optional argument means stdin too).
 */
import { resolve } from 'node:path';
import { DEFAULT_MAX_BYTES, readDocumentText } from '../core/document.js';
import type { CommandContext } from './command.js';

/**
 * The text and where it came from (`stdin` or the resolved path). A file that cannot be read is handed to `fail`,
 * which returns the command's own coded error.
 */
export async function readInput(
  file: string | undefined,
  ctx: CommandContext,
  fail: (cause: unknown, path: string) => Error,
): Promise<{ text: string; source: string }> {
  if (file === undefined || file === '' || file === '-') {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of ctx.io.stdin) {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
      size += chunks[chunks.length - 1]!.length;
      if (size > DEFAULT_MAX_BYTES) {
        throw fail(
          Object.assign(new Error(`EFBIG: standard input is larger than ${DEFAULT_MAX_BYTES} bytes`), {
            code: 'EFBIG',
          }),
          'stdin',
        );
      }
    }
    return { text: Buffer.concat(chunks).toString('utf8'), source: 'stdin' };
  }
  const path = resolve(ctx.cwd, file);
  try {
    return { text: await readDocumentText(path), source: path };
  } catch (cause) {
    throw fail(cause, path);
  }
}
