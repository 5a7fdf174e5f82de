/**
 * Runs a Node script (or, with runCommand, any command) as a real child process on this Node (the project's Node 24 when tests run through npm), with a
 * minimal environment: PATH and HOME plus what the test gives — so nothing of the developer's environment leaks in.
 */
import { spawn } from 'node:child_process';

export interface NodeRunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Wall time of the run. */
  ms: number;
}

export interface NodeRunOptions {
  /** Added to PATH and HOME (a value of `undefined` removes the variable). */
  env?: Record<string, string | undefined>;
  /** Written to the child's stdin, which is then closed; default: stdin closed at once. */
  stdin?: string;
  cwd?: string;
  /** Node options before the script, e.g. `['--import', hook]`. */
  nodeArgs?: readonly string[];
}

export function runNode(script: string, args: readonly string[], options: NodeRunOptions = {}): Promise<NodeRunResult> {
  return runCommand(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...options.env },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
  });
}

/** Any command (setpriv, unshare …) with exactly the environment given; stdout and stderr collected. */
export function runCommand(
  command: string,
  argv: readonly string[],
  options: { env: Record<string, string | undefined>; cwd?: string; stdin?: string },
): Promise<NodeRunResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, {
      env: options.env,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: performance.now() - started }));
    // A child may exit before it reads its stdin (most never do): the pipe's EPIPE is not the test's failure.
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.stdin ?? '');
  });
}
