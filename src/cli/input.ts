/**
 * A command's document argument: a file, or standard input for `-` (yargs hands a lone `-` over as an empty string,
 * and an omitted optional argument means stdin too).
 */
import { resolve } from 'node:path';
import { readStreamBounded } from '../base/bounded-read.js';
import { DEFAULT_MAX_BYTES, readDocumentText } from '../base/document.js';
import { errno } from '../base/errors.js';
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
    try {
      return { text: await readStreamBounded(ctx.io.stdin, 'standard input', DEFAULT_MAX_BYTES), source: 'stdin' };
    } catch (cause) {
      // Too much is the command's error; a stream that fails is not (as before: it propagates).
      if (errno(cause) === 'EFBIG') throw fail(cause, 'stdin');
      throw cause;
    }
  }
  const path = resolve(ctx.cwd, file);
  try {
    return { text: await readDocumentText(path), source: path };
  } catch (cause) {
    throw fail(cause, path);
  }
}
