/**
 * When the fleet fetches a credential again, apart from any I/O so that a frozen clock tests it: a refresh ahead of
 * the credential's expiry, jittered so that credentials issued together do not come due together, and after a
 * failure an exponential backoff, jittered and capped, so that clusters failing together retry apart.
 */

/** How refreshes and retries are timed. Every field has a default ({@link DEFAULT_REFRESH_POLICY}). */
export interface RefreshPolicy {
  /**
   * A refresh comes due `marginMs` before the credential's expiry (the provider's `minRemainingSeconds` for our
   * providers: the point from which the shared cache stops serving it), minus a random share of the lifetime.
   */
  marginMs: number;
  /** The random share: up to this fraction of the credential's lifetime earlier (default 0.1). */
  jitterFraction: number;
  /** ...and at most this much earlier (default 5 min). */
  maxJitterMs: number;
  /** Never sooner than this after the credential was obtained (default 1 s): a short-lived credential cannot spin. */
  minDelayMs: number;
  /** First retry after a failure (default 1 s); doubles per consecutive failure. */
  backoffBaseMs: number;
  /** Longest wait between attempts (default 5 min). */
  backoffMaxMs: number;
}

/** The refresh policy a fleet uses where its `refresh` option sets nothing. */
export const DEFAULT_REFRESH_POLICY: Readonly<RefreshPolicy> = Object.freeze({
  marginMs: 60_000,
  jitterFraction: 0.1,
  maxJitterMs: 300_000,
  minDelayMs: 1_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 300_000,
});

/**
 * When to refresh a credential obtained at `obtainedAt` that expires at `expiresAt` (epoch ms): `expiresAt −
 * marginMs − r × min(jitterFraction × lifetime, maxJitterMs)`, `r` from `random` in [0, 1), never before
 * `obtainedAt + minDelayMs`. Undefined for a credential without expiry (kept until the API server refuses it).
 *
 * @example
 * ```ts
 * refreshTime(0, 3_600_000, DEFAULT_REFRESH_POLICY, () => 0.5); // 3_600_000 − 60_000 − 180_000
 * ```
 */
export function refreshTime(
  obtainedAt: number,
  expiresAt: number | undefined,
  policy: RefreshPolicy,
  random: () => number,
): number | undefined {
  if (expiresAt === undefined) return undefined;
  const lifetime = Math.max(0, expiresAt - obtainedAt);
  const spread = Math.min(policy.jitterFraction * lifetime, policy.maxJitterMs);
  const at = expiresAt - policy.marginMs - random() * spread;
  return Math.max(Math.round(at), obtainedAt + policy.minDelayMs);
}

/**
 * The wait before attempt `failures + 1` after `failures` consecutive failures (≥ 1): `backoffBaseMs × 2^(failures−1)`,
 * capped at `backoffMaxMs`, then scaled by `0.5 + random / 2` so that clusters failing together retry apart.
 */
export function backoffDelay(failures: number, policy: RefreshPolicy, random: () => number): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 30);
  const delay = Math.min(policy.backoffBaseMs * 2 ** exponent, policy.backoffMaxMs);
  return Math.round(delay * (0.5 + random() / 2));
}
