/**
 * One credential from one provider, in-process: the cache, its lock and the provider, without a command line,
 * environment variables or stdout. {@link runPlugin} is this plus argv, KUBERNETES_EXEC_INFO, stdout and exit codes;
 * a fleet manager calls it directly, for thousands of clusters in one process.
 *
 * Everything the call depends on arrives in its options (environment, clock, signal, streams): it reads no process
 * globals, installs no process signal handlers, adds no listeners to the caller's signal and leaves no timers behind.
 */
import { CredentialsError, formatError } from '../base/errors.js';
import type { ExecCredentialStatus } from '../base/exec-credential.js';
import { assertUsableStatus, formatTimestamp } from '../base/exec-credential.js';
import type { Env } from '../base/io.js';
import { acquireLock, type HeldLock } from '../base/private-files/pid-lock.js';
import {
  cacheDirectory,
  cacheKey,
  checkPrivateDirectory,
  ensurePrivateDirectory,
  entryPath,
  lockPath,
  readEntry,
  removeEntry,
  writeEntry,
  type EntryRead,
} from './cache.js';
import { assertNoFlagClash, parseCommand } from './flags.js';
import type { CredentialProvider, ExecCredentialInput, FlagInput, FlagSpecs, FlagValues } from './provider.js';

/** Default wait for another holder of the cache lock when neither the call nor the provider says otherwise. */
export const DEFAULT_LOCK_TIMEOUT_MS = 60_000;

/** What {@link obtainCredential} needs. Required: what a credential depends on; optional: where it is kept and told. */
export interface ObtainCredentialOptions<F extends FlagSpecs = FlagSpecs> {
  /** The ExecCredential input as kubectl would send it: `spec.cluster` (with its `config`) and `spec.interactive`. */
  input: ExecCredentialInput;
  /**
   * The provider's flag values (`{ 'cluster-id': 'c1', 'key-file': '/k' }`; optional ones may be left out), or
   * argv-style strings as the binary takes them (`['--cluster-id', 'c1', '--cache-dir', '/c']`), parsed by the same
   * parser; there `--cache-dir` and `--force-refresh` apply unless {@link cacheDir} / {@link forceRefresh} are given.
   */
  flags: FlagInput<F> | FlagValues<F> | readonly string[];
  /** The provider's environment (what `exec.env` plus the parent's would be); also where `KUBECACHEDIR` is read. */
  env: Env;
  /** The clock. */
  now: () => Date;
  /**
   * Stops a lock wait and the provider's work (its `IssueContext.signal`); a cached credential is served whatever its
   * state. May be shared by any number of calls: the runtime adds no listener to it.
   */
  signal: AbortSignal;
  /**
   * The user's terminal, handed to the provider only when `input.spec.interactive` is true (default: empty). Read
   * only on a miss, like {@link stderr}: either may be a getter.
   */
  stdin?: NodeJS.ReadableStream;
  /** Diagnostics (lock waits, a discarded cache entry) and the provider's prompts (default: discarded). */
  stderr?: NodeJS.WritableStream;
  /**
   * The cache directory, as the binary's `--cache-dir` (default: `$KUBECACHEDIR/clusterprofile/<provider>` from
   * {@link env}, else `~/.kube/cache/clusterprofile/<provider>`): the binary's default, so a call and kubectl share
   * entries and locks.
   */
  cacheDir?: string;
  /** Ignore a cached credential and obtain a new one (default false). */
  forceRefresh?: boolean;
  /** Wait this long for another holder of the lock (default: the provider's `lockTimeoutMs`, else 60 s). */
  lockTimeoutMs?: number;
  /** First retry interval for a busy lock (default 10 ms; backs off to 100 ms, with jitter). */
  lockPollMs?: number;
  /** A lock older than this is broken even if its owner looks alive (default 10 min); a dead owner's at once. */
  staleLockMs?: number;
}

/** A credential and where it came from. */
export interface ObtainedCredential {
  status: ExecCredentialStatus;
  /** True when a cached entry was served (by the lock-free read or by the re-read under the lock). */
  fromCache: boolean;
}

/**
 * Obtains a credential the way the provider's binary would, sharing its cache entries and locks: a cached credential
 * valid for the provider's `minRemainingSeconds` more — by its `expirationTimestamp`, the provider's
 * `stateExpiresAt` and, when it holds a client certificate, that certificate's own notBefore and notAfter — is served
 * without the lock; otherwise the key's lock is taken,
 * the entry read again (another process may just have issued), the provider asked (with the previous entry), and a
 * credential with an expiry written atomically. A failure writes nothing.
 *
 * Throws what the provider and the runtime throw: `CredentialsError`s (the main export's) with stable codes (bad flags:
 * `ERR_PLUGIN_USAGE`; the provider's configuration and issuance codes; `ERR_PLUGIN_CACHE_*`), or the signal's reason.
 *
 * @example
 * ```ts
 * const { status } = await obtainCredential(tenantCertProvider, {
 *   input: { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', spec: { interactive: false, cluster } },
 *   flags: { 'cluster-id': 'hub-1', 'key-file': '/etc/fleet/hub.key' },
 *   env: process.env,
 *   now: () => new Date(),
 *   signal: shutdown.signal,
 * });
 * ```
 */
export function obtainCredential<F extends FlagSpecs, Settings, State>(
  provider: CredentialProvider<F, Settings, State>,
  options: ObtainCredentialOptions<F>,
): Promise<ObtainedCredential> {
  return obtain(provider, options, {});
}

/**
 * What {@link runPlugin} adds around {@link obtain}; not part of the package's API.
 * @internal
 */
export interface RuntimeHooks {
  /** The provider's settings are made: a failure from here on is a credential failure, not a usage error. */
  settled?(): void;
  /** On a miss, before the lock: the binary's full check of KUBERNETES_EXEC_INFO. */
  beforeIssue?(): Promise<void>;
  /** While the lock is held: the binary releases it on SIGINT/SIGTERM/SIGHUP. Returns the undo. */
  whileLocked?(lock: HeldLock): () => void;
}

/** {@link obtainCredential} with the binary's hooks. @internal */
export async function obtain<F extends FlagSpecs, Settings, State>(
  provider: CredentialProvider<F, Settings, State>,
  options: ObtainCredentialOptions<F>,
  hooks: RuntimeHooks,
): Promise<ObtainedCredential> {
  assertNoFlagClash(provider.flags);
  const { input, env, now } = options;
  const command = provider.command ?? `clusterprofile-${provider.name}`;
  let { cacheDir, forceRefresh } = options;
  if (cacheDir === '') {
    throw new CredentialsError('ERR_PLUGIN_USAGE', 'the cache directory must not be empty', { path: 'cacheDir' });
  }
  let flags: FlagValues<F>;
  if (isArgv(options.flags)) {
    const parsed = parseCommand(provider, options.flags);
    if (parsed.action !== 'credential') {
      throw new CredentialsError(
        'ERR_PLUGIN_USAGE',
        `flags for a credential cannot ask for ${parsed.action === 'help' ? '--help' : 'the clean command'}`,
        {
          path: parsed.action === 'help' ? '--help' : 'clean',
        },
      );
    }
    flags = parsed.flags;
    cacheDir ??= parsed.cacheDir;
    forceRefresh ??= parsed.forceRefresh;
  } else {
    flags = flagValues(provider.flags, options.flags);
  }

  const settings = await provider.settings({ input, flags, env });
  hooks.settled?.();
  const dir = cacheDirectory(provider.name, cacheDir, env);
  const key = cacheKey(provider.name, provider.cacheKey(settings));
  const minRemainingMs = (provider.minRemainingSeconds ?? 60) * 1000;
  /** An entry whose stamps (its expiry, the provider's state) say it is valid for at least the margin more. */
  const stamped = (read: EntryRead<State>): read is Extract<EntryRead<State>, { kind: 'entry' }> =>
    read.kind === 'entry' &&
    read.expiresAt - now().getTime() > minRemainingMs &&
    (provider.stateExpiresAt === undefined ||
      (provider.stateExpiresAt(read.entry.state) ?? Number.NEGATIVE_INFINITY) - now().getTime() > minRemainingMs);
  /**
   * Why a stamped entry's certificate, if it holds one, is not valid by its own notBefore and notAfter; undefined when
   * it is. The reader is a chunk of its own: a token's cache hit does not load it.
   */
  const stale = async (read: Extract<EntryRead<State>, { kind: 'entry' }>): Promise<string | undefined> => {
    const pem = read.entry.status.clientCertificateData;
    return pem === undefined ? pem : (await import('./certificate-validity.js')).staleness(pem, now(), minRemainingMs);
  };

  // Fast path: no lock, no provider code beyond settings().
  if (forceRefresh !== true && checkPrivateDirectory(dir)) {
    const read = readEntry<State>(dir, key);
    if (stamped(read) && !(await stale(read))) return { status: read.entry.status, fromCache: true };
  }
  await hooks.beforeIssue?.();
  // Only now: a cached credential is served even to an aborted signal (nothing to stop), and runPlugin makes its
  // AbortController on a miss only.
  const signal = options.signal;
  signal.throwIfAborted();

  // The slow path: take the key's lock, read the entry again, else call the provider and store what it returns.
  let stderr: NodeJS.WritableStream | undefined;
  const diagnostics = (): NodeJS.WritableStream => (stderr ??= options.stderr ?? discard());
  const say = (message: string): void => {
    diagnostics().write(`${command}: ${message}\n`);
  };
  ensurePrivateDirectory(dir);
  const file = lockPath(dir, key);
  const lock = await acquireLock(file, {
    timeoutMs: options.lockTimeoutMs ?? provider.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    pollMs: options.lockPollMs ?? 10,
    staleMs: options.staleLockMs ?? 600_000,
    now,
    signal,
    onWait: (owner) =>
      say(
        `waiting for ${owner === undefined ? 'another plugin' : `process ${owner.pid}`} to finish (cache lock ${file})`,
      ),
    onBreak: (owner, reason) =>
      say(`removed a stale cache lock${owner === undefined ? '' : ` of process ${owner.pid}`}: ${reason}`),
    protects: entryPath(dir, key),
  });
  const unhook = hooks.whileLocked?.(lock);
  try {
    let read = readEntry<State>(dir, key);
    if (read.kind === 'corrupted') {
      say(`discarding the corrupted cache entry ${entryPath(dir, key)}: ${read.reason}`);
      removeEntry(dir, key);
      read = { kind: 'missing' };
    }
    if (forceRefresh !== true && stamped(read)) {
      const why = await stale(read);
      if (!why) return { status: read.entry.status, fromCache: true };
      // Its stamp was edited, restored from a backup or written on a wrong clock: renew; the new entry replaces it.
      say(`renewing: the certificate cached in ${entryPath(dir, key)} ${why}`);
    }
    const issuedAt = now();
    const interactive = input.spec.interactive === true;
    let stdin: NodeJS.ReadableStream | undefined;
    const issued = await provider.issue(settings, {
      now,
      interactive,
      // Getters: the streams are made only for a provider that reads or writes them (creating process.stderr is a
      // noticeable part of a miss).
      get stdin() {
        stdin ??=
          interactive && options.stdin !== undefined
            ? options.stdin
            : process.getBuiltinModule('node:stream').Readable.from([]);
        return stdin;
      },
      get stderr() {
        return diagnostics();
      },
      signal,
      env,
      previous: read.kind === 'entry' ? read.entry : undefined,
    });
    assertUsableStatus(issued.status);
    if (issued.status.expirationTimestamp !== undefined) {
      try {
        await writeEntry(
          dir,
          key,
          {
            status: issued.status,
            issuedAt: formatTimestamp(issuedAt.getTime()),
            ...(issued.state === undefined ? {} : { state: issued.state }),
          },
          { removeDebris: false },
        );
      } catch (error) {
        // The credential is good; only the next call pays for the missing entry.
        say(`warning: ${formatError(error)}`);
      }
    }
    return { status: issued.status, fromCache: false };
  } finally {
    lock.release();
    unhook?.();
  }
}

function isArgv(flags: unknown): flags is readonly string[] {
  return Array.isArray(flags);
}

/**
 * Typed flag values as the parser would return them: booleans default to false, repeatable strings to `[]`. A
 * name the provider does not declare, a value of the wrong type or a missing required flag is `ERR_PLUGIN_USAGE`
 * with the flag as `path` (callers from JavaScript get the checks TypeScript gives the others).
 */
function flagValues<F extends FlagSpecs>(specs: F, given: FlagInput<F> | FlagValues<F>): FlagValues<F> {
  const input = given as Readonly<Record<string, unknown>>;
  const usage = (name: string, message: string): CredentialsError =>
    new CredentialsError('ERR_PLUGIN_USAGE', `--${name} ${message}`, { path: `--${name}` });
  for (const name of Object.keys(input)) {
    if (!Object.hasOwn(specs, name)) throw usage(name, 'is not a flag of this provider');
  }
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    const value = input[name];
    if (spec.type === 'boolean') {
      if (value !== undefined && typeof value !== 'boolean') throw usage(name, 'must be a boolean');
      values[name] = value === true;
    } else if (spec.multiple === true) {
      if (value !== undefined && !(Array.isArray(value) && value.every((item) => typeof item === 'string')))
        throw usage(name, 'must be a list of strings');
      values[name] = value ?? [];
    } else {
      if (value !== undefined && typeof value !== 'string') throw usage(name, 'must be a string');
      if (value === undefined && spec.required === true)
        throw new CredentialsError('ERR_PLUGIN_USAGE', `missing required flag --${name}`, { path: `--${name}` });
      values[name] = value;
    }
  }
  return values as FlagValues<F>;
}

/** A stream that drops what it is given: the default for diagnostics nobody asked to see. */
function discard(): NodeJS.WritableStream {
  const { Writable } = process.getBuiltinModule('node:stream');
  return new Writable({
    write(_chunk, _encoding, done) {
      done();
    },
  });
}
