/**
 * The issuer's background loops — collecting spent nonce records (`--state kubernetes`), reloading the serving pair
 * (`--tls-cert-file`), reconciling Tenants (`--reconcile-tenants`) — report each run here, so that a failure nobody
 * asked for is seen whatever the log format: it is logged (one line per failure, through the one logger `issuer
 * serve` has in either format), counted (`clusterprofile_issuer_background_failures_total{loop}`), and, once a loop
 * has failed without a success for longer than its allowance, it fails /readyz (a {@link ReadinessCheck} per loop).
 *
 * The allowance: three of the loop's periods, at least a minute — a run that fails once (an API server restarting) is
 * logged and counted but does not take the replica out of service; one that keeps failing does.
 *
 * Logged: the first failure in a row, a failure whose message differs from the one before, every tenth in a row, and
 * the first success after failures; every failure is counted.
 */
import { CredentialsError } from '../base/errors.js';

/** The loops, as the metric's `loop` label names them. */
export const BACKGROUND_LOOPS = ['nonce-collection', 'serving-reload', 'tenant-reconciler'] as const;
export type BackgroundLoop = (typeof BACKGROUND_LOOPS)[number];

/** A condition of readiness, in the shape ./server.ts takes (`ReadinessCheck`). */
export interface LoopReadinessCheck {
  name: string;
  check(signal: AbortSignal): Promise<void>;
}

/** What a loop calls after each run. */
export interface LoopReport {
  /** The run did its work. */
  succeeded(): void;
  /** The run failed; the loop goes on. */
  failed(error: unknown): void;
}

/** Readiness: a loop failing without a success for this many periods (and at least {@link MIN_ALLOWANCE_MS}). */
export const ALLOWED_PERIODS = 3;
export const MIN_ALLOWANCE_MS = 60_000;

/** How a loop is watched besides counting. */
export interface LoopOptions {
  /** Log its failures here (default true); false: the loop logs them itself, in its own words. */
  log?: boolean;
  /** Fail readiness once it has failed for longer than its allowance (default true). */
  readiness?: boolean;
}

interface LoopState {
  allowanceMs: number;
  log: boolean;
  readiness: boolean;
  /** Since when the loop has failed without a success in between; undefined while it works. */
  failingSince: number | undefined;
  failures: number;
  lastError: string;
}

export interface BackgroundLoopsOptions {
  /** One line per failure (the issuer's logger). */
  log?(line: string): void;
  /** Counts a failure (the metric). */
  counted?(loop: BackgroundLoop): void;
  /** Epoch ms. */
  now(): number;
}

export class BackgroundLoops {
  readonly #loops = new Map<BackgroundLoop, LoopState>();
  readonly #options: BackgroundLoopsOptions;

  constructor(options: BackgroundLoopsOptions) {
    this.#options = options;
  }

  /** A loop that runs about every `periodMs` (its longest interval between two runs), and how it reports. */
  register(loop: BackgroundLoop, periodMs: number, options: LoopOptions = {}): LoopReport {
    const state: LoopState = {
      allowanceMs: Math.max(MIN_ALLOWANCE_MS, ALLOWED_PERIODS * periodMs),
      log: options.log !== false,
      readiness: options.readiness !== false,
      failingSince: undefined,
      failures: 0,
      lastError: '',
    };
    this.#loops.set(loop, state);
    return {
      succeeded: () => {
        if (state.failures > 0 && state.log)
          this.#options.log?.(`background ${loop} works again after ${state.failures} failures`);
        state.failingSince = undefined;
        state.failures = 0;
        state.lastError = '';
      },
      failed: (error) => {
        const message = error instanceof Error ? error.message : String(error);
        state.failingSince ??= this.#options.now();
        state.failures += 1;
        const changed = message !== state.lastError;
        state.lastError = message;
        this.#options.counted?.(loop);
        if (state.log && (state.failures === 1 || changed || state.failures % 10 === 0))
          this.#options.log?.(`background ${loop} failed (${state.failures} in a row): ${message}`);
      },
    };
  }

  /** One readiness check per registered loop that takes part in readiness, named `background:<loop>`. */
  readinessChecks(): LoopReadinessCheck[] {
    return [...this.#loops]
      .filter(([, state]) => state.readiness)
      .map(([loop, state]) => ({
        name: `background:${loop}`,
        check: async () => {
          if (state.failingSince === undefined) return;
          const failingMs = this.#options.now() - state.failingSince;
          if (failingMs <= state.allowanceMs) return;
          throw new CredentialsError(
            'ERR_ISSUER_NOT_READY',
            `background ${loop} has failed for ${Math.round(failingMs / 1000)} s (${state.failures} runs in a row, more than the ${state.allowanceMs / 1000} s allowed): ${state.lastError}`,
          );
        },
      }));
  }
}
