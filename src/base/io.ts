/**
 * The side effects a binary's composition root receives instead of reaching for globals (conventions: side effects are passed in; one composition root per binary): every
 * `run(argv, env, io)` returns an exit code and never calls `process.exit` itself.
 */
export interface ProcessIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Environment variables, as `process.env` holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Monotonic milliseconds; not `performance.now()`, whose first use loads perf_hooks (8 modules) into a plugin's miss. */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/**
 * The user's home directory as `os.homedir()` finds it — `$HOME` first, outside Windows — without loading node:os
 * when HOME is set (the module would add to a plugin's peak RSS).
 */
export function homeDirectory(): string {
  const home = process.platform === 'win32' ? undefined : process.env['HOME'];
  return home ?? process.getBuiltinModule('node:os').homedir();
}

/** The host name `os.hostname()` gives; on Linux read from /proc (the same UTS name) without loading node:os. */
export function hostName(): string {
  try {
    return process.getBuiltinModule('node:fs').readFileSync('/proc/sys/kernel/hostname', 'utf8').trim();
  } catch {
    return process.getBuiltinModule('node:os').hostname();
  }
}

/** The shape of every binary's entry module export. */
export type Run = (argv: readonly string[], env: Env, io: ProcessIo) => Promise<number>;

/**
 * Writes to stdout. When `io` is the real process, writes to file descriptor 1 directly: creating
 * `process.stdout` (a pipe socket under kubectl) costs more start-up than the rest of a cache hit. Falls back to the
 * stream if the descriptor is non-blocking and full (EAGAIN).
 */
export function writeStdout(io: ProcessIo, text: string): void {
  if ((io as unknown) === process) {
    const bytes = Buffer.from(text, 'utf8');
    let offset = 0;
    try {
      while (offset < bytes.length) offset += process.getBuiltinModule('node:fs').writeSync(1, bytes, offset);
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'EAGAIN') throw error;
    }
    io.stdout.write(bytes.subarray(offset));
    return;
  }
  io.stdout.write(text);
}
