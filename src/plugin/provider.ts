/**
 * The narrow interface every credential provider implements. The runtime does the rest: {@link obtainCredential} the
 * on-disk cache with its lock (in-process), {@link runPlugin} on top of it KUBERNETES_EXEC_INFO, flags, the single
 * JSON document on stdout and exit codes (a binary).
 *
 * A provider module must stay light at the top level: import only types and small helpers statically, and
 * `await import()` the heavy code (HTTP, JOSE, TLS, YAML, Kubernetes client) inside {@link CredentialProvider.issue},
 * so a cache hit never loads it.
 *
 * @example
 * ```ts
 * import { CredentialsError } from '../../core/errors.js';
 * import { runPlugin, type CredentialProvider } from '../../plugin/index.js';
 *
 * const flags = {
 *   'cluster-id': { type: 'string', required: true, description: 'this cluster\'s ID' },
 *   'key-file': { type: 'string', required: true, description: 'PKCS#8 PEM private key' },
 * } as const;
 *
 * const provider: CredentialProvider<typeof flags, { clusterId: string; keyFile: string; issuerURL: string }> = {
 *   name: 'tenant-cert',
 *   description: 'short-lived client certificates through the Tenant/Identity handshake',
 *   flags,
 *   settings({ flags, input }) {
 *     const config = input.spec.cluster?.config as { issuerURL?: string } | undefined;
 *     if (config?.issuerURL === undefined) {
 *       throw new CredentialsError('ERR_TENANT_CERT_CONFIG', 'issuerURL is missing', { path: '$.spec.cluster.config.issuerURL' });
 *     }
 *     return { clusterId: flags['cluster-id'], keyFile: flags['key-file'], issuerURL: config.issuerURL };
 *   },
 *   cacheKey: (settings) => settings,
 *   async issue(settings, context) {
 *     const { handshake } = await import('./handshake.js'); // heavy code: only on a cache miss
 *     return handshake(settings, context);
 *   },
 * };
 *
 * export const run = runPlugin(provider);
 * ```
 *
 * @see https://github.com/kubernetes/enhancements/tree/master/keps/sig-auth/541-external-credential-providers
 */
import type { ExecCredentialInput, ExecCredentialStatus } from '../base/exec-credential.js';

export type { ExecCredentialInput };
import type { Env } from '../base/io.js';

/**
 * One command-line flag of a provider, in the shape of `node:util` `parseArgs` options (no yargs on the hot path).
 * Flags are written `--name value` or `--name=value`; booleans as `--name`.
 */
export interface FlagSpec {
  type: 'string' | 'boolean';
  /** One line for `--help`. */
  description: string;
  /** A string flag that may be repeated; its value is then a `string[]`. */
  multiple?: boolean;
  /** A missing required flag is a usage error (exit 2) before {@link CredentialProvider.settings} runs. */
  required?: boolean;
  /** The placeholder shown in `--help`, e.g. `FILE`. */
  placeholder?: string;
}

/** A provider's flags, by long name without the dashes (`'key-file'`). */
export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

/** The parsed values of {@link FlagSpecs}: booleans default to false, optional strings are `undefined` when absent. */
export type FlagValues<F extends FlagSpecs> = {
  readonly [K in keyof F]: F[K]['type'] extends 'boolean'
    ? boolean
    : F[K]['multiple'] extends true
      ? readonly string[]
      : F[K]['required'] extends true
        ? string
        : string | undefined;
};

/** The flags that must be given: required, single strings. */
export type RequiredFlagNames<F extends FlagSpecs> = {
  [K in keyof F]: F[K]['type'] extends 'string'
    ? F[K]['multiple'] extends true
      ? never
      : F[K]['required'] extends true
        ? K
        : never
    : never;
}[keyof F];

/**
 * Flag values as a caller of {@link obtainCredential} writes them: the required ones, and any of the others (a
 * missing boolean is false, a missing repeatable flag `[]`). A {@link FlagValues} is one too.
 */
export type FlagInput<F extends FlagSpecs> = { readonly [K in RequiredFlagNames<F>]: string } & {
  readonly [K in Exclude<keyof F, RequiredFlagNames<F>>]?: FlagValues<F>[K];
};

/** What {@link CredentialProvider.settings} gets to work from. */
export interface SettingsRequest<F extends FlagSpecs> {
  /** The validated KUBERNETES_EXEC_INFO (a v1beta1 document with `interactive` from the terminal when it is missing). */
  input: ExecCredentialInput;
  flags: FlagValues<F>;
  /** The plugin's environment (kubeconfig `exec.env` merged into the parent's). */
  env: Env;
}

/**
 * A cache entry as the runtime stores it (a 0600 JSON file). `state` is the provider's own data (a refresh token,
 * the issued-at time, a certificate serial): whatever it returned in {@link IssuedCredential.state}.
 */
export interface CachedCredential<State = unknown> {
  status: ExecCredentialStatus;
  state?: State;
  /** RFC 3339: when the runtime stored it. */
  issuedAt: string;
}

/** What {@link CredentialProvider.issue} receives besides its settings. */
export interface IssueContext<State = unknown> {
  /** The clock: use it, never `Date.now()`. */
  now(): Date;
  /** False: never prompt, never open a browser, fail with a clear error instead. */
  interactive: boolean;
  /** The user's terminal when {@link interactive}; otherwise an empty stream. */
  stdin: NodeJS.ReadableStream;
  /** Diagnostics and prompts: the user sees stderr; stdout belongs to the runtime. */
  stderr: NodeJS.WritableStream;
  /** Aborted when the plugin must stop (a signal, the runtime's deadline). */
  signal: AbortSignal;
  env: Env;
  /**
   * The previous cache entry for the same key, even if expired or `--force-refresh` was given (e.g. to use its
   * refresh token); undefined when there is none. The lock is held: a rotating refresh token is used once.
   */
  previous: CachedCredential<State> | undefined;
}

/** A freshly obtained credential. */
export interface IssuedCredential<State = unknown> {
  /**
   * The ExecCredential status to print. Must hold a token and/or a certificate + key pair. Without
   * `expirationTimestamp` the credential is printed but never cached.
   */
  status: ExecCredentialStatus;
  /** Provider data kept in the cache entry (0600) next to the status, handed back as {@link IssueContext.previous}. */
  state?: State;
}

/**
 * One credential type. `Settings` is whatever the provider derives from flags, environment and input; `State` is
 * what it keeps in the cache besides the status.
 */
export interface CredentialProvider<F extends FlagSpecs = FlagSpecs, Settings = unknown, State = unknown> {
  /** Short and stable (`'tenant-cert'`): the cache subdirectory `clusterprofile/<name>/` and message prefixes. */
  name: string;
  /** The binary's name for `--help` and messages; defaults to `clusterprofile-<name>`. */
  command?: string;
  /** One line for `--help`. */
  description: string;
  /** The provider's own flags; the runtime adds `--cache-dir`, `--force-refresh`, `--help` and the `clean` command. */
  flags: F;
  /**
   * A cached credential is served only while it is valid for at least this many seconds more (default 60).
   * Choose it so a client that got the credential can still use it for a whole request.
   */
  minRemainingSeconds?: number;
  /**
   * How long a process that finds the cache lock held waits for its holder (default 60 s). Longer than the slowest
   * issuance the provider allows (its network deadline, an interactive login), so that parallel cold starts end with
   * one issuance instead of waiters giving up while the holder is still at work.
   */
  lockTimeoutMs?: number;
  /**
   * When a cached credential stops working by its own {@link IssuedCredential.state} (a certificate's notAfter), for
   * credentials that can end before their `expirationTimestamp` says (a clock that was wrong when the entry was
   * written, an edited entry): epoch ms, or undefined when the state cannot tell — the entry is then not served. Runs
   * on every cache hit: read a stored value, never parse a certificate (the runtime itself checks the notBefore and
   * notAfter of a cached `clientCertificateData`, for every provider).
   */
  stateExpiresAt?(state: State | undefined): number | undefined;
  /**
   * The provider's settings from flags, environment and input. Runs on every invocation, cache hit included: keep it
   * cheap (no network). Throw a `CredentialsError` for bad configuration: exit 2, nothing on stdout.
   */
  settings(request: SettingsRequest<F>): Settings | Promise<Settings>;
  /**
   * Every input that affects the identity of the credential (issuer, client, subject, scopes, key, the cluster):
   * JSON-serialised with sorted keys and hashed with the provider name into the cache key. Leave something out and
   * two identities share a credential.
   */
  cacheKey(settings: Settings): unknown;
  /**
   * Obtain a fresh credential, under the cache lock. Dynamic-import heavy code here. Throw a
   * `CredentialsError` on failure: exit 1, nothing on stdout, nothing cached.
   */
  issue(settings: Settings, context: IssueContext<State>): Promise<IssuedCredential<State>>;
}
