/**
 * The fleet's fetcher for this package's plugins (and providers the caller registered by provider name): the
 * provider runs in this process through `obtainCredential`, with the flags of the providers file and the environment
 * the binary would get, so it reads and writes the binary's cache directory under the binary's lock: kubectl running
 * the plugin on the same host and the fleet never issue the same credential twice.
 */
import { parseTimestamp } from '../../base/exec-credential.js';
import { CredentialsError } from '../../base/errors.js';
import type { Env } from '../../base/io.js';
import { parseCommand, type PluginCommand } from '../../plugin/flags.js';
import { obtainCredential, type ObtainedCredential } from '../../plugin/obtain.js';
import type { FlagSpecs } from '../../plugin/provider.js';
import { parseExecCredential, type ExecCredential } from '../../exec/output.js';
import { buildExecRequest } from '../../exec/request.js';
import type { AccessConfig, ExecCluster, ExecConfig, ResolvedClusterAccess } from '../../resolve/types.js';
import type { FleetClock } from '../scheduler/clock.js';
import type { Semaphore } from '../scheduler/semaphore.js';
import type { AnyCredentialProvider } from '../fleet-types.js';
import { builtinPluginOf, loadBuiltinProvider } from './builtin-plugins.js';

/** How a slot's credential is obtained in-process: the provider and its parsed argv (flags, --cache-dir, --force-refresh). */
export interface InProcessPlan {
  provider: AnyCredentialProvider;
  argv: readonly string[];
  command: PluginCommand<FlagSpecs>;
}

export interface InProcessFetcherOptions {
  env: Env;
  clock: FleetClock;
  /** Deadline of one fetch: the provider is aborted. */
  fetchTimeoutMs: number;
  /** Providers for provider names (the providers file's `name`), used in-process whatever their command. */
  providers: Readonly<Record<string, AnyCredentialProvider>>;
  /** Obtain our own plugins' credentials in-process; false leaves them to the exec fetcher. */
  inProcess: boolean;
  /** The fleet's bound on fetches (shared with the exec fetcher). */
  fetches: Semaphore;
}

/** What a fetch reads of the slot it fetches for (./slots.ts's CredentialSlot, which imports this module). */
export interface InProcessFetchTarget {
  /** The providers-file entry's name, for messages. */
  readonly providerName: string;
  /** The credential the slot holds now, read once the shared cache has answered. */
  readonly credential: ExecCredential | undefined;
}

/** Plans (which provider, which flags) and runs in-process fetches. */
export class InProcessFetcher {
  readonly #options: InProcessFetcherOptions;
  /** This package's providers, loaded by {@link prepare}, by binary name. */
  readonly #providers = new Map<string, AnyCredentialProvider>();
  /** In-process plans by provider name and argv. */
  readonly #plans = new Map<string, InProcessPlan>();

  constructor(options: InProcessFetcherOptions) {
    this.#options = options;
  }

  /**
   * Loads this package's providers the providers file names (a provider's door pulls in its whole folder: once, here,
   * so that {@link plan} stays synchronous).
   */
  async prepare(accessConfig: AccessConfig): Promise<void> {
    if (!this.#options.inProcess) return;
    for (const entry of accessConfig.providers) {
      const builtin = entry.execConfig === undefined ? undefined : builtinPluginOf(entry.execConfig);
      if (builtin !== undefined && !this.#providers.has(builtin.binary)) {
        this.#providers.set(builtin.binary, await loadBuiltinProvider(builtin.binary));
      }
    }
  }

  /**
   * How `access` is fetched in-process; undefined when it is not (the exec fetcher runs it). Throws
   * `ERR_PLUGIN_USAGE` (path = the flag) when the provider cannot parse the providers file's args.
   */
  plan(access: ResolvedClusterAccess): InProcessPlan | undefined {
    const registered = Object.hasOwn(this.#options.providers, access.providerName)
      ? this.#options.providers[access.providerName]
      : undefined;
    let provider: AnyCredentialProvider | undefined = registered;
    let argv: readonly string[] = access.exec.args;
    if (provider === undefined) {
      const builtin = this.#options.inProcess ? builtinPluginOf(access.exec) : undefined;
      provider = builtin === undefined ? undefined : this.#providers.get(builtin.binary);
      // Not prepared (a providers file changed under us): run the binary.
      if (builtin === undefined || provider === undefined) return undefined;
      argv = builtin.argv;
    }
    // One plan per provider and argv (the providers file names a handful): parsed once, not per fetch or member.
    const key = `${provider.name}\0${argv.join('\0')}`;
    const known = this.#plans.get(key);
    if (known !== undefined && known.provider === provider) return known;
    // The binary's own parser: a flag it would refuse is refused now, for this member only.
    const parsed = parseCommand(provider, argv);
    if (parsed.action !== 'credential') {
      throw new CredentialsError(
        'ERR_PLUGIN_USAGE',
        `the args of provider ${JSON.stringify(access.providerName)} ask for ${parsed.action === 'help' ? '--help' : 'the clean command'}, not a credential`,
        {
          path: parsed.action === 'help' ? '--help' : 'clean',
        },
      );
    }
    const plan: InProcessPlan = { provider, argv, command: parsed };
    this.#plans.set(key, plan);
    return plan;
  }

  /**
   * The provider in this process, under the fetch bound and the deadline. A credential the shared cache serves that
   * is not newer than the one the slot holds (the scheduler refreshing ahead of the cache's margin, or a 401) is
   * replaced by a forced issuance; a newer one (kubectl renewed it) is taken as it is.
   */
  async fetch(
    slot: InProcessFetchTarget,
    plan: InProcessPlan,
    exec: ExecConfig,
    cluster: ExecCluster | undefined,
    onTimeout: () => void,
  ): Promise<ExecCredential> {
    const { clock, fetchTimeoutMs } = this.#options;
    return this.#options.fetches.run(async () => {
      // What the binary would get: KUBERNETES_EXEC_INFO's document and the environment with exec.env merged in. Made
      // once a place is held: a cold fleet queues a fetch per member at once, and as many copies of the environment
      // waiting for their turn outlive young-generation collections (the old generation grows by them, for good).
      const request = buildExecRequest(exec, cluster, { env: this.#options.env });
      const controller = new AbortController();
      let timer: unknown;
      const deadline = new Promise<never>((_, reject) => {
        timer = clock.setTimer(() => {
          onTimeout();
          const error = new CredentialsError(
            'ERR_FLEET_CREDENTIAL_TIMEOUT',
            `provider ${plan.provider.name} did not return a credential for ${cluster?.server ?? slot.providerName} within ${fetchTimeoutMs} ms; it was aborted`,
            {
              path: slot.providerName,
              hint: 'check what the provider waits for (its issuer or API server), or raise fetchTimeoutMs',
            },
          );
          controller.abort(error);
          reject(error);
        }, fetchTimeoutMs);
      });
      deadline.catch(() => undefined);
      try {
        const { command } = plan;
        const options = {
          input: request.execInfo,
          // The parsed argv: what the binary's parser read from it, without parsing it again per fetch.
          flags: command.flags,
          ...(command.cacheDir === undefined ? {} : { cacheDir: command.cacheDir }),
          forceRefresh: command.forceRefresh,
          env: request.env,
          now: () => new Date(clock.now()),
          signal: controller.signal,
        };
        const obtain = async (): Promise<ObtainedCredential> => {
          const first = await obtainCredential(plan.provider, options);
          const known = slot.credential?.expiresAt;
          const served = expiryOf(first);
          if (first.fromCache && known !== undefined && served !== undefined && served <= known) {
            return obtainCredential(plan.provider, { ...options, forceRefresh: true });
          }
          return first;
        };
        const result = await Promise.race([obtain(), deadline]);
        return parseExecCredential(
          JSON.stringify({ apiVersion: exec.apiVersion, kind: 'ExecCredential', status: result.status }),
          exec.apiVersion,
        );
      } finally {
        clock.clearTimer(timer);
      }
    });
  }
}

function expiryOf(obtained: ObtainedCredential): number | undefined {
  const stamp = obtained.status.expirationTimestamp;
  return stamp === undefined ? undefined : parseTimestamp(stamp);
}
