import type { Run } from './io.js';
import type { CredentialProvider, FlagSpecs } from './provider.js';

/** Knobs of the runtime; production defaults, overridden by tests. */
export interface RunPluginOptions {
  /** The clock (default: the system clock). */
  now?: () => Date;
  /** How long to wait for another process holding the cache lock (default 30 s: an interactive login takes time). */
  lockTimeoutMs?: number;
  /** How often to retry taking the lock (default 10 ms). */
  lockPollMs?: number;
  /** A lock older than this whose owner is not alive (or older than this times 10) is taken over (default 60 s). */
  staleLockMs?: number;
}

/**
 * The composition root of a plugin binary: `export const run = runPlugin(provider);` and the bin stub calls
 * `run(process.argv.slice(2), process.env, process)`.
 */
export function runPlugin<F extends FlagSpecs, Settings, State>(
  provider: CredentialProvider<F, Settings, State>,
  options: RunPluginOptions = {},
): Run {
  void provider;
  void options;
  return async (_argv, _env, io) => {
    io.stderr.write('not implemented yet\n');
    return 1;
  };
}
