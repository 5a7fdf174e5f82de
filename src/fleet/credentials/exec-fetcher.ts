/**
 * The fleet's fetcher for plugins that are not ours: the providers file's command run as a process
 * (KUBERNETES_EXEC_INFO in, an ExecCredential out), bounded in processes and fetches, killed at its deadline or when
 * the fleet closes.
 */
import type { Env } from '../../base/io.js';
import type { ExecCredential } from '../../exec/output.js';
import { runExecPlugin } from '../../exec/runner.js';
import type { ExecCluster, ExecConfig } from '../../resolve/types.js';
import type { Semaphore } from '../scheduler/semaphore.js';

export interface ExecFetcherOptions {
  env: Env;
  /** Deadline of one run: the process is killed. */
  fetchTimeoutMs: number;
  /** A plugin process's stderr. */
  onStderr?: (text: string) => void;
  /** The fleet's bound on fetches (shared with the in-process fetcher). */
  fetches: Semaphore;
  /** The fleet's bound on plugin processes. */
  processes: Semaphore;
  /** Aborted when the fleet closes: processes still running are killed (a closing CLI would orphan them). */
  signal: AbortSignal;
}

/** Runs plugin processes for the fleet's slots. */
export class ExecFetcher {
  readonly #options: ExecFetcherOptions;

  constructor(options: ExecFetcherOptions) {
    this.#options = options;
  }

  /** The plugin as a process: a process place first (so waiting for one holds no fetch place), then a fetch place. */
  async fetch(exec: ExecConfig, cluster: ExecCluster | undefined): Promise<ExecCredential> {
    const options = this.#options;
    return options.processes.run(() =>
      options.fetches.run(() =>
        runExecPlugin(exec, cluster, {
          env: options.env,
          signal: options.signal,
          timeoutMs: options.fetchTimeoutMs,
          ...(options.onStderr === undefined ? {} : { onStderr: options.onStderr }),
        }),
      ),
    );
  }
}
