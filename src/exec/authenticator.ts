/**
 * Credentials from an exec plugin, cached in memory with client-go's rules and without its gaps: one authenticator
 * per {exec config, cluster the plugin sees} (never per user name), single flight (any number of concurrent callers
 * → one exec), refresh ahead of `expirationTimestamp` by a margin, nothing cached unless the plugin's output was
 * valid, and on a 401 a re-exec only if the credential that got the 401 is still the current one.
 */
import type { ExecCluster, ExecConfig } from '../base/exec-credential.js';
import type { ExecCredential } from './output.js';
import { runExecPlugin, type ExecRunOptions } from './runner.js';
import { validatePluginPolicy } from './policy.js';
import { canonicalJson } from '../base/canonical-json.js';

/** Default: refresh this long before `expirationTimestamp` (capped at half the credential's lifetime). */
export const DEFAULT_REFRESH_MARGIN_MS = 60_000;

/** Runs the plugin once; the default is {@link runExecPlugin}. A seam for tests with a frozen clock. */
export type ExecRun = (
  exec: ExecConfig,
  cluster: ExecCluster | undefined,
  options: ExecRunOptions,
) => Promise<ExecCredential>;

/** Options of {@link ExecAuthenticator} and {@link ExecCredentialCache}: how the plugin runs, and when to refresh. */
export interface ExecAuthenticatorOptions extends ExecRunOptions {
  /** Epoch ms. Default `Date.now`. */
  now?: () => number;
  /** Refresh this long before expiry. Default {@link DEFAULT_REFRESH_MARGIN_MS}. */
  refreshMarginMs?: number;
  run?: ExecRun;
}

interface Cached {
  credential: ExecCredential;
  /** When to exec again (epoch ms); Infinity without expiry. */
  refreshAt: number;
}

/**
 * One exec config + cluster. Get the credential for each request with {@link getCredential}; report a 401 with
 * {@link onUnauthorized} and the credential that request used.
 *
 * @example
 *   const auth = new ExecAuthenticator(exec, cluster);
 *   const credential = await auth.getCredential();
 *   const res = await fetch(url, { headers: { authorization: `Bearer ${credential.token}` } });
 *   if (res.status === 401) auth.onUnauthorized(credential);
 */
export class ExecAuthenticator {
  readonly exec: ExecConfig;
  readonly cluster: ExecCluster | undefined;
  #options: ExecAuthenticatorOptions;
  #now: () => number;
  #run: ExecRun;
  #cached: Cached | undefined;
  #inflight: Promise<ExecCredential> | undefined;
  #execs = 0;

  /** Throws `ERR_EXEC_PLUGIN_POLICY_INVALID` for a malformed `pluginPolicy` (client-go refuses it when it builds the authenticator). */
  constructor(exec: ExecConfig, cluster: ExecCluster | undefined, options: ExecAuthenticatorOptions = {}) {
    validatePluginPolicy(options.pluginPolicy);
    this.exec = exec;
    this.cluster = cluster;
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#run = options.run ?? runExecPlugin;
  }

  /** How many times the plugin was run (successful or not). */
  get execCount(): number {
    return this.#execs;
  }

  /** The cached credential if it is still fresh (no exec, synchronous), else undefined. */
  peek(): ExecCredential | undefined {
    const cached = this.#cached;
    return cached !== undefined && this.#now() < cached.refreshAt ? cached.credential : undefined;
  }

  /**
   * The current credential: the cached one while fresh, else one exec shared by every concurrent caller. Rejects
   * with the plugin's coded error (nothing is cached then; the next call runs the plugin again).
   */
  getCredential(): Promise<ExecCredential> {
    const fresh = this.peek();
    if (fresh !== undefined) {
      return Promise.resolve(fresh);
    }
    this.#inflight ??= this.#refresh();
    return this.#inflight;
  }

  async #refresh(): Promise<ExecCredential> {
    try {
      this.#execs += 1;
      const credential = await this.#run(this.exec, this.cluster, this.#options);
      const now = this.#now();
      if (credential.expiresAt === undefined) {
        this.#cached = { credential, refreshAt: Number.POSITIVE_INFINITY };
      } else if (credential.expiresAt > now) {
        const margin = Math.min(
          this.#options.refreshMarginMs ?? DEFAULT_REFRESH_MARGIN_MS,
          (credential.expiresAt - now) / 2,
        );
        this.#cached = { credential, refreshAt: credential.expiresAt - margin };
      } else {
        // Already expired: good for the callers waiting now (client-go would send it too), never cached.
        this.#cached = undefined;
      }
      return credential;
    } finally {
      this.#inflight = undefined;
    }
  }

  /**
   * A request made with `used` got a 401. If `used` is still the current credential, it is dropped and the next
   * request runs the plugin; if it was already replaced (another request refreshed it), nothing happens. The 401
   * itself is the caller's to report (client-go returns it too).
   */
  onUnauthorized(used: ExecCredential): void {
    if (this.#cached?.credential === used) {
      this.#cached = undefined;
    }
  }

  /** Forgets the cached credential. */
  clear(): void {
    this.#cached = undefined;
  }
}

/**
 * The cache key: everything the plugin sees. The exec config (command, args, env, apiVersion, interactiveMode,
 * provideClusterInfo) and, when `provideClusterInfo`, the cluster incl. `config` — the plugin cannot tell clusters
 * apart otherwise, so they share its answer, as in client-go. Never a user or context name.
 */
export function execCacheKey(exec: ExecConfig, cluster: ExecCluster | undefined): string {
  const { installHint: _hint, ...identity } = exec;
  return canonicalJson({ exec: identity, cluster: exec.provideClusterInfo === true ? cluster : undefined });
}

/**
 * A process-wide (or per-owner) set of authenticators, keyed by {@link execCacheKey}. Two KubeConfigs for the same
 * plugin input share one authenticator and so one credential and one single flight.
 */
export class ExecCredentialCache {
  #options: ExecAuthenticatorOptions;
  #authenticators = new Map<string, ExecAuthenticator>();

  /** Throws `ERR_EXEC_PLUGIN_POLICY_INVALID` for a malformed `pluginPolicy`. */
  constructor(options: ExecAuthenticatorOptions = {}) {
    validatePluginPolicy(options.pluginPolicy);
    this.#options = options;
  }

  authenticatorFor(exec: ExecConfig, cluster: ExecCluster | undefined): ExecAuthenticator {
    const key = execCacheKey(exec, cluster);
    let authenticator = this.#authenticators.get(key);
    if (authenticator === undefined) {
      authenticator = new ExecAuthenticator(exec, cluster, this.#options);
      this.#authenticators.set(key, authenticator);
    }
    return authenticator;
  }

  /** Drops the authenticator (and its credential) of one plugin input, e.g. when its ClusterProfile is deleted. */
  forget(exec: ExecConfig, cluster: ExecCluster | undefined): boolean {
    const key = execCacheKey(exec, cluster);
    this.#authenticators.get(key)?.clear();
    return this.#authenticators.delete(key);
  }

  get size(): number {
    return this.#authenticators.size;
  }

  /** Forgets every credential and authenticator. */
  clear(): void {
    for (const authenticator of this.#authenticators.values()) authenticator.clear();
    this.#authenticators.clear();
  }
}
