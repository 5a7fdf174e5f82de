import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CredentialsError, type ErrorCode } from '../../src/base/errors.js';
import { readInput } from '../../src/cli/input.js';
import type { CommandContext } from '../../src/cli/command.js';

function context(stdin: string[]): CommandContext {
  return {
    env: {},
    cwd: '/work',
    io: { stdin: Readable.from(stdin), stdout: new PassThrough(), stderr: new PassThrough() },
  };
}

const fail = (cause: unknown, path: string) =>
  new CredentialsError('ERR_TEST_READ' as ErrorCode, `cannot read ${path}: ${(cause as Error).message}`, { path });

describe('a command document argument', () => {
  it.each(['-', '', undefined])('%j reads standard input', async (file) => {
    expect(await readInput(file, context(['kind: ', 'Tenant']), fail)).toEqual({
      text: 'kind: Tenant',
      source: 'stdin',
    });
  });

  it("a path is resolved against the working directory; a missing file is the command's own coded error", async () => {
    await expect(readInput('no/such.yaml', context([]), fail)).rejects.toMatchObject({
      code: 'ERR_TEST_READ',
      path: '/work/no/such.yaml',
      message: expect.stringContaining('ENOENT'),
    });
  });
});
