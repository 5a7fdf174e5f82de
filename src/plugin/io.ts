/**
 * The side effects a binary's composition root receives instead of reaching for globals (STYLE 3, 4): every
 * `run(argv, env, io)` returns an exit code and never calls `process.exit` itself.
 */
export interface ProcessIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

export type Env = Readonly<Record<string, string | undefined>>;

/** The shape of every binary's entry module export. */
export type Run = (argv: readonly string[], env: Env, io: ProcessIo) => Promise<number>;
