/**
 * The runtime every plugin binary shares: flags, KUBERNETES_EXEC_INFO, the cache with double-checked locking, the
 * single ExecCredential document on stdout, diagnostics on stderr, exit codes.
 */
import { CredentialsError, formatError, isCredentialsError, type ErrorCodes } from '../core/errors.js';
import type { ExecCredentialStatus } from '../core/exec-credential.js';
import {
  cacheDirectory,
  cacheKey,
  checkPrivateDirectory,
  cleanDirectory,
  ensurePrivateDirectory,
  entryPath,
  lockPath,
  readEntry,
  removeEntry,
  writeEntry,
  type EntryRead,
} from './cache.js';
import { assertUsableStatus, readExecInfo, renderExecCredential } from '../core/exec-credential.js';
import { assertNoFlagClash, helpText, parseCommand } from './flags.js';
import { writeStdout, type Env, type ProcessIo, type Run } from '../core/io.js';
import { acquireLock, isLockHeld, type HeldLock } from '../core/private-files.js';
import type { CredentialProvider, ExecCredentialInput, FlagSpecs } from './provider.js';

/** Knobs of the runtime; production defaults, overridden by tests. */
export interface RunPluginOptions {
  /** The clock (default: the system clock). */
  now?: () => Date;
  /** How long to wait for another process holding the cache lock (default 60 s: an interactive login takes time). */
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
 * What one invocation does: parse flags; `--help` / `clean` if asked; read KUBERNETES_EXEC_INFO; ask the provider for
 * its settings; serve a cached credential that stays valid for `minRemainingSeconds` (read without the lock); else
 * take `<key>.lock`, read again (another process may just have issued), call `provider.issue`, write the entry
 * atomically, release the lock, and print exactly one ExecCredential in the input's apiVersion.
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
  const lockOptions = {
    timeoutMs: options.lockTimeoutMs ?? 60_000,
    pollMs: options.lockPollMs ?? 10,
    staleMs: options.staleLockMs ?? 600_000,
    now,
  };
  const minRemainingMs = (provider.minRemainingSeconds ?? 60) * 1000;
  const say = (io: ProcessIo, message: string): void => {
    io.stderr.write(`${command}: ${message}\n`);
  };
  /** An entry to serve: valid for at least the provider's margin more. */
  const fresh = (read: EntryRead<State>): read is Extract<EntryRead<State>, { kind: 'entry' }> =>
    read.kind === 'entry' && read.expiresAt - now().getTime() > minRemainingMs;

  return async (argv, env, io) => {
    let stage: 'usage' | 'credential' = 'usage';
    try {
      const parsed = parseCommand(provider, argv);
      if (parsed.action === 'help') {
        io.stdout.write(helpText(command, provider));
        return EXIT.ok;
      }
      const dir = cacheDirectory(provider.name, parsed.cacheDir, env);
      if (parsed.action === 'clean') {
        stage = 'credential';
        const { entries, skippedLocks } = cleanDirectory(dir, (file) => isLockHeld(file, lockOptions));
        io.stdout.write(`removed ${entries} cached credential${entries === 1 ? '' : 's'} from ${dir}\n`);
        if (skippedLocks > 0) say(io, `left ${skippedLocks} lock${skippedLocks === 1 ? '' : 's'} held by running plugins`);
        return EXIT.ok;
      }
      // stdin is only looked at without KUBERNETES_EXEC_INFO: creating process.stdin costs start-up time.
      const input = readExecInfo(env, () => io.stdin.isTTY === true);
      const settings = await provider.settings({ input, flags: parsed.flags, env });
      stage = 'credential';
      const key = cacheKey(provider.name, provider.cacheKey(settings));

      // Fast path: no lock, no provider code beyond settings().
      if (!parsed.forceRefresh && checkPrivateDirectory(dir)) {
        const read = readEntry<State>(dir, key);
        if (fresh(read)) {
          writeStdout(io, renderExecCredential(input.apiVersion, read.entry.status));
          return EXIT.ok;
        }
      }

      // The authoritative check against schemas/execcredential-input.<version>.schema.json, only on a miss: the
      // precompiled validators are a large module, and readExecInfo's hand check (same rules, tested against the
      // schema) already guards the hit path.
      if (env['KUBERNETES_EXEC_INFO'] !== undefined && env['KUBERNETES_EXEC_INFO'].trim() !== '') {
        stage = 'usage';
        const { assertDocument } = await import('../schemas/index.js');
        assertDocument(input.apiVersion.endsWith('/v1') ? 'execcredential-input.v1' : 'execcredential-input.v1beta1', input, {
          code: 'ERR_PLUGIN_EXEC_INFO',
          what: 'KUBERNETES_EXEC_INFO',
        });
        stage = 'credential';
      }

      const status = await issueUnderLock({ dir, key, settings, input, forceRefresh: parsed.forceRefresh, env, io });
      writeStdout(io, renderExecCredential(input.apiVersion, status));
      return EXIT.ok;
    } catch (error) {
      return report(io, env, error, stage);
    }
  };

  /**
   * The slow path: take the key's lock, read the entry again (another run may just have written it), else call
   * the provider and store what it returns. Nothing is written unless the provider succeeds.
   */
  async function issueUnderLock(request: {
    dir: string;
    key: string;
    settings: Settings;
    input: ExecCredentialInput;
    forceRefresh: boolean;
    env: Env;
    io: ProcessIo;
  }): Promise<ExecCredentialStatus> {
    const { dir, key, settings, input, forceRefresh, env, io } = request;
    ensurePrivateDirectory(dir);
    const controller = new AbortController();
    const file = lockPath(dir, key);
    const lock = await acquireLock(file, {
      ...lockOptions,
      signal: controller.signal,
      onWait: (owner) => say(io, `waiting for ${owner === undefined ? 'another plugin' : `process ${owner.pid}`} to finish (cache lock ${file})`),
      onBreak: (owner, reason) => say(io, `removed a stale cache lock${owner === undefined ? '' : ` of process ${owner.pid}`}: ${reason}`),
    });
    const unhook = releaseOnSignal(lock, controller);
    try {
      let read = readEntry<State>(dir, key);
      if (read.kind === 'corrupted') {
        say(io, `discarding the corrupted cache entry ${entryPath(dir, key)}: ${read.reason}`);
        removeEntry(dir, key);
        read = { kind: 'missing' };
      }
      if (!forceRefresh && fresh(read)) {
        return read.entry.status;
      }
      const issuedAt = now();
      const interactive = input.spec.interactive === true;
      const issued = await provider.issue(settings, {
        now,
        interactive,
        stdin: interactive ? io.stdin : process.getBuiltinModule('node:stream').Readable.from([]),
        stderr: io.stderr,
        signal: controller.signal,
        env,
        previous: read.kind === 'entry' ? read.entry : undefined,
      });
      assertUsableStatus(issued.status);
      if (issued.status.expirationTimestamp !== undefined) {
        try {
          writeEntry(dir, key, { status: issued.status, issuedAt: issuedAt.toISOString(), ...(issued.state === undefined ? {} : { state: issued.state }) });
        } catch (error) {
          // The credential is good; only the next run pays for the missing entry.
          say(io, `warning: ${formatError(error)}`);
        }
      }
      return issued.status;
    } finally {
      lock.release();
      unhook();
    }
  }

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
