/**
 * The runtime every plugin binary shares: flags, KUBERNETES_EXEC_INFO, the single ExecCredential document on stdout,
 * diagnostics on stderr, exit codes — around {@link obtain}, which does the cache, the lock and the provider.
 */
import { CredentialsError, formatError, isCredentialsError, type ErrorCodes } from '../base/errors.js';
import { readExecInfo, renderExecCredential } from '../base/exec-credential.js';
import { cacheDirectory, cleanDirectory } from './cache.js';
import { assertNoFlagClash, helpText, parseCommand } from './flags.js';
import { writeStdout, type Env, type ProcessIo, type Run } from '../base/io.js';
import { isLockHeld, type HeldLock } from '../base/private-files/pid-lock.js';
import { packageVersion } from '../base/version.js';
import { obtain } from './obtain.js';
import type { CredentialProvider, FlagSpecs } from './provider.js';

/** Knobs of the runtime; production defaults, overridden by tests. */
export interface RunPluginOptions {
  /** The clock (default: the system clock). */
  now?: () => Date;
  /** How long to wait for another process holding the cache lock (default: the provider's `lockTimeoutMs`, else 60 s). */
  lockTimeoutMs?: number;
  /** First retry interval for a busy lock (default 10 ms; backs off to 100 ms, with jitter). */
  lockPollMs?: number;
  /** A lock older than this is broken even if its owner looks alive (default 10 min); a dead owner's at once. */
  staleLockMs?: number;
}

/** Code of an issuance stopped by SIGINT/SIGTERM/SIGHUP (the abort reason providers see on their signal). */
export type RunErrorCode = ErrorCodes<'ERR_PLUGIN_INTERRUPTED'>;

/** Exit codes of every plugin. */
export const EXIT = {
  /** A credential was printed (or `clean` / `--help` succeeded). */
  ok: 0,
  /** No credential: the provider failed, the cache is unusable, the lock timed out. Nothing on stdout. */
  failure: 1,
  /** Bad flags, a bad KUBERNETES_EXEC_INFO or bad provider configuration. Nothing on stdout. */
  usage: 2,
} as const;

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * The composition root of a plugin binary. The returned {@link Run} never throws and never calls `process.exit`:
 * it resolves to the exit code ({@link EXIT}).
 *
 * What one invocation does: parse flags; `--help` / `clean` if asked; read KUBERNETES_EXEC_INFO; then
 * {@link obtainCredential} (settings, a cached credential valid for `minRemainingSeconds`, else the lock, the
 * provider and the cache entry), and print exactly one ExecCredential in the input's apiVersion. While the lock is
 * held, SIGINT/SIGTERM/SIGHUP release it and abort the provider.
 *
 * @example
 * ```ts
 * // src/providers/example/main.ts (bundled to dist/bin/clusterprofile-example.mjs; bin stub calls run)
 * export const run = runPlugin(exampleProvider);
 * ```
 */
export function runPlugin<F extends FlagSpecs, Settings, State>(
  provider: CredentialProvider<F, Settings, State>,
  options: RunPluginOptions = {},
): Run {
  assertNoFlagClash(provider.flags);
  const command = provider.command ?? `clusterprofile-${provider.name}`;
  const now = options.now ?? (() => new Date());
  const staleMs = options.staleLockMs ?? 600_000;
  const say = (io: ProcessIo, message: string): void => {
    io.stderr.write(`${command}: ${message}\n`);
  };

  return async (argv, env, io) => {
    let stage: 'usage' | 'credential' = 'usage';
    try {
      const parsed = parseCommand(provider, argv);
      if (parsed.action === 'help') {
        io.stdout.write(helpText(command, provider));
        return EXIT.ok;
      }
      if (parsed.action === 'version') {
        io.stdout.write(`${packageVersion()}\n`);
        return EXIT.ok;
      }
      const dir = cacheDirectory(provider.name, parsed.cacheDir, env);
      if (parsed.action === 'clean') {
        stage = 'credential';
        const { entries, skippedLocks } = cleanDirectory(dir, (file) => isLockHeld(file, { staleMs, now }));
        io.stdout.write(`removed ${entries} cached credential${entries === 1 ? '' : 's'} from ${dir}\n`);
        if (skippedLocks > 0)
          say(io, `left ${skippedLocks} lock${skippedLocks === 1 ? '' : 's'} held by running plugins`);
        return EXIT.ok;
      }
      // stdin is only looked at without KUBERNETES_EXEC_INFO: creating process.stdin costs start-up time.
      const input = readExecInfo(env, () => io.stdin.isTTY === true);
      let controller: AbortController | undefined;
      const { status } = await obtain(
        provider,
        {
          input,
          flags: parsed.flags,
          env,
          now,
          // Getters: a hit needs none of these, and touching process.stdin/stderr creates the stream (start-up time).
          get signal() {
            controller ??= new AbortController();
            return controller.signal;
          },
          get stdin() {
            return io.stdin;
          },
          get stderr() {
            return io.stderr;
          },
          cacheDir: dir,
          forceRefresh: parsed.forceRefresh,
          ...(options.lockTimeoutMs === undefined ? {} : { lockTimeoutMs: options.lockTimeoutMs }),
          ...(options.lockPollMs === undefined ? {} : { lockPollMs: options.lockPollMs }),
          staleLockMs: staleMs,
        },
        {
          settled: () => {
            stage = 'credential';
          },
          // The authoritative check against schemas/execcredential-input.<version>.schema.json, only on a miss: the
          // precompiled validators are a large module, and readExecInfo's hand check (same rules, tested against the
          // schema) already guards the hit path.
          beforeIssue: async () => {
            if (env['KUBERNETES_EXEC_INFO'] === undefined || env['KUBERNETES_EXEC_INFO'].trim() === '') return;
            stage = 'usage';
            (await import('./schemas.js')).assertExecInfo(input);
            stage = 'credential';
          },
          whileLocked: (lock) => {
            controller ??= new AbortController();
            return releaseOnSignal(lock, controller);
          },
        },
      );
      writeStdout(io, renderExecCredential(input.apiVersion, status));
      return EXIT.ok;
    } catch (error) {
      return report(io, env, error, stage);
    }
  };

  function report(io: ProcessIo, env: Env, error: unknown, stage: 'usage' | 'credential'): number {
    if (isCredentialsError(error)) {
      say(io, formatError(error));
      // The registry's exit code; a code it does not know (a provider's own) exits 2 from settings, else 1.
      return error.exitCode ?? (stage === 'usage' ? EXIT.usage : EXIT.failure);
    }
    const debug = env['CLUSTERPROFILE_DEBUG'] !== undefined && env['CLUSTERPROFILE_DEBUG'] !== '';
    const detail = debug && error instanceof Error && error.stack !== undefined ? error.stack : formatError(error);
    say(io, `internal error: ${detail}${debug ? '' : ' (set CLUSTERPROFILE_DEBUG=1 for a stack trace)'}`);
    return EXIT.failure;
  }
}

/**
 * While the lock is held, a SIGINT/SIGTERM/SIGHUP releases it, aborts the provider and then lets the signal take
 * its default course (the process ends), so an interrupted login leaves neither a lock nor an entry behind. A host
 * process that handles the signal itself (runPlugin used in-process) keeps its own handling.
 */
function releaseOnSignal(lock: HeldLock, controller: AbortController): () => void {
  const handler = (signal: NodeJS.Signals): void => {
    lock.release();
    controller.abort(new CredentialsError('ERR_PLUGIN_INTERRUPTED', `interrupted by ${signal}`));
    unhook();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const unhook = (): void => {
    for (const signal of SIGNALS) process.off(signal, handler);
  };
  for (const signal of SIGNALS) process.on(signal, handler);
  return unhook;
}
