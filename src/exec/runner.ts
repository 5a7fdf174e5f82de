/**
 * Step 2 of an exec: run the plugin as a child process (no shell) and collect what it printed; then step 3
 * ({@link parseExecCredential}). stdout is buffered (bounded), stderr captured (bounded) into errors and optionally
 * passed on, stdin only when interactive, a timeout kills the plugin's whole process group.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { ExecCluster, ExecConfig } from '../base/exec-credential.js';
import { execError, type ExecError } from './errors.js';
import { parseExecCredential, type ExecCredential } from './output.js';
import type { Env } from '../base/io.js';
import { buildExecRequest, type ExecRequest } from './request.js';
import { notFoundProblem } from './own-plugin-hint.js';
import { checkPluginPolicy, validatePluginPolicy, type CredentialPluginPolicy } from './policy.js';

/** Default time a plugin may run before it is killed (client-go has none: kubernetes#108849). */
export const DEFAULT_EXEC_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_STDOUT_BYTES = 4 * 1024 * 1024;
export const DEFAULT_MAX_STDERR_BYTES = 64 * 1024;

/** Options of {@link runExecPlugin}: environment, limits and the credential plugin policy. */
export interface ExecRunOptions {
  /** The parent environment. Default: `process.env`. */
  env?: Env;
  /** Kill the plugin after this many ms (`0` = no limit). Default {@link DEFAULT_EXEC_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Whether the host's stdin is a terminal; only matters for interactiveMode IfAvailable / Always. Default false. */
  stdinIsTerminal?: boolean;
  /** Receives the plugin's stderr as it arrives (client-go shows it to the user). Default: only kept for errors. */
  onStderr?: (text: string) => void;
  maxStdoutBytes?: number;
  maxStderrBytes?: number;
  /** Recursion guard limit. Default 3. */
  maxDepth?: number;
  /**
   * Which plugins may run (client-go 1.35's `PluginPolicy`, kuberc's `credentialPluginPolicy` /
   * `credentialPluginAllowlist`). Default: all. A plugin it denies is `ERR_EXEC_PLUGIN_DENIED`; a malformed policy
   * `ERR_EXEC_PLUGIN_POLICY_INVALID`.
   */
  pluginPolicy?: CredentialPluginPolicy;
  /** Kills the plugin's process group when aborted (the run then rejects with the signal's reason). */
  signal?: AbortSignal;
}

interface Outcome {
  stdout: string;
  stderr: string;
}

function withStderr(message: string, stderr: string): string {
  const text = stderr.trim();
  return text === '' ? message : `${message}\nplugin stderr:\n${text}`;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/** Spawns the request and resolves with its output, or rejects with a coded error. Never throws synchronously. */
export function spawnExecRequest(request: ExecRequest, options: ExecRunOptions = {}): Promise<Outcome> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  const maxStdout = options.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES;
  const maxStderr = options.maxStderrBytes ?? DEFAULT_MAX_STDERR_BYTES;
  const command = request.command;
  return new Promise<Outcome>((resolve, reject) => {
    let settled = false;
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = '';
    let stderrTruncated = false;
    let timer: NodeJS.Timeout | undefined;
    const stderrText = () => (stderrTruncated ? `${stderr}\n[stderr truncated at ${maxStderr} bytes]` : stderr);
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      if (timer !== undefined) clearTimeout(timer);
      options.signal?.removeEventListener('abort', abort);
      reject(error);
    };
    let abort = (): void => undefined;
    if (options.signal?.aborted === true) {
      fail(options.signal.reason);
      return;
    }

    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(request.executable ?? command, request.args, {
        env: request.env,
        shell: false,
        // Its own process group, so a timeout kills the plugin and everything it started.
        detached: true,
        windowsHide: true,
        stdio: [request.interactive ? 'inherit' : 'ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      fail(
        execError('ERR_EXEC_FAILED', `exec: executable ${command} could not be started: ${(error as Error).message}`, {
          cause: error,
        }),
      );
      return;
    }
    const pid = child.pid;
    if (options.signal !== undefined) {
      abort = () => {
        killGroup(child.pid);
        fail(options.signal!.reason);
      };
      options.signal.addEventListener('abort', abort, { once: true });
    }

    if (timeoutMs > 0) {
      timer = setTimeout(() => {
        killGroup(child.pid);
        fail(
          execError(
            'ERR_EXEC_TIMEOUT',
            withStderr(
              `exec: executable ${command} did not finish within ${timeoutMs} ms; it was killed`,
              stderrText(),
            ),
            { hint: 'raise the exec timeout or fix the plugin (is it waiting for input or a network?)' },
          ),
        );
      }, timeoutMs);
    }

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > maxStdout) {
        killGroup(child.pid);
        fail(
          execError(
            'ERR_EXEC_OUTPUT_INVALID',
            withStderr(`decoding stdout: output exceeds ${maxStdout} bytes`, stderrText()),
          ),
        );
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      options.onStderr?.(chunk);
      if (stderr.length < maxStderr) {
        stderr += chunk.slice(0, maxStderr - stderr.length);
        if (stderr.length >= maxStderr && chunk.length > 0) stderrTruncated = true;
      } else {
        stderrTruncated = true;
      }
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'EACCES' || error.code === 'ENOTDIR') {
        const { message, hint } = notFoundProblem(command, request.installHint);
        fail(execError('ERR_EXEC_NOT_FOUND', message, { path: command, cause: error, ...(hint ? { hint } : {}) }));
      } else {
        killGroup(pid);
        fail(execError('ERR_EXEC_FAILED', `exec: executable ${command} failed: ${error.message}`, { cause: error }));
      }
    });
    child.on('close', (code, signal) => {
      if (settled) return;
      if (code === 0) {
        settled = true;
        if (timer !== undefined) clearTimeout(timer);
        options.signal?.removeEventListener('abort', abort);
        resolve({ stdout: Buffer.concat(stdout).toString('utf8'), stderr: stderrText() });
      } else if (code !== null) {
        fail(
          execError(
            'ERR_EXEC_FAILED',
            withStderr(`exec: executable ${command} failed with exit code ${code}`, stderrText()),
          ),
        );
      } else {
        fail(
          execError(
            'ERR_EXEC_FAILED',
            withStderr(`exec: executable ${command} was killed by signal ${signal}`, stderrText()),
          ),
        );
      }
    });
  });
}

/**
 * Runs an exec credential plugin with client-go semantics and returns its checked credential. Never caches:
 * see {@link ExecAuthenticator} for caching and single flight.
 *
 * @example
 *   const credential = await runExecPlugin(
 *     { apiVersion: 'client.authentication.k8s.io/v1', command: 'my-plugin', interactiveMode: 'Never' },
 *     { server: 'https://10.0.0.3:6443' },
 *   );
 */
export async function runExecPlugin(
  exec: ExecConfig,
  cluster: ExecCluster | undefined,
  options: ExecRunOptions = {},
): Promise<ExecCredential> {
  validatePluginPolicy(options.pluginPolicy);
  const parentEnv = options.env ?? process.env;
  const request = buildExecRequest(exec, cluster, {
    env: parentEnv,
    stdinIsTerminal: options.stdinIsTerminal ?? false,
    ...(options.maxDepth === undefined ? {} : { maxDepth: options.maxDepth }),
  });
  const executable = checkPluginPolicy(options.pluginPolicy, exec.command, parentEnv, exec.installHint);
  if (executable !== exec.command) request.executable = executable;
  const outcome = await spawnExecRequest(request, options);
  try {
    return parseExecCredential(outcome.stdout, exec.apiVersion);
  } catch (error) {
    const e = error as ExecError;
    throw execError(e.code, withStderr(e.message, outcome.stderr), { cause: e.cause ?? e, path: exec.command });
  }
}
