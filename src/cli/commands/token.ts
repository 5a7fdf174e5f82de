/**
 * `clusterprofile token sync`: mint tokens on member clusters and keep them fresh in hub Secrets, in the layout of
 * upstream's secretreader plugin or, with `--layout kubeconfig-secretreader`, of its kubeconfig-secretreader plugin
 * (see ../token-sync.ts). One pass by default; `--interval` loops until SIGINT or SIGTERM.
 */
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Argv } from 'yargs';
import { loadAccessConfig } from '../../resolve/access-config.js';
import { CredentialsError } from '../../base/errors.js';
import { runExecPlugin } from '../../exec/runner.js';
import { PROVIDER_FILE_OPTION, withProviderFileOption } from '../../resolve/provider-file-option.js';
import { credentialFromExec, KubeClient } from '../../kube/kube-client.js';
import type { KubeCredential, KubeEndpoint } from '../../kube/types.js';
import { syncTokensOnce, TOKEN_SYNC_LAYOUTS, type TokenSyncLayout } from '../token-sync.js';
import { parseDuration } from '../duration.js';
import { actionsUsage, type ActionSpec, type CommandArgs, type CommandContext } from '../command.js';

export const actions = {
  sync: {
    usage: '$0 token sync [-n NAMESPACE] [--cluster NAME]... [--layout LAYOUT] [--interval DURATION] [options]',
    describe:
      "Mint member-cluster tokens (TokenRequest through the selected exec plugin) into hub Secrets in the Secret Reader layout, or with --layout kubeconfig-secretreader as kubeconfigs for upstream's kubeconfig-secretreader plugin.",
  },
} as const satisfies Record<string, ActionSpec>;

export function builder(parser: Argv): Argv<object> {
  return withProviderFileOption(parser)
    .usage(actionsUsage(actions, 'Tokens for member clusters, kept in hub Secrets.'))
    .positional('action', { choices: Object.keys(actions), describe: 'sync: mint member tokens into hub Secrets' })
    .option('namespace', {
      alias: 'n',
      type: 'string',
      requiresArg: true,
      describe:
        "Hub namespace of the ClusterProfiles and the token Secrets (default: the hub context's or pod's namespace)",
    })
    .option('cluster', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe: 'Only these ClusterProfiles (repeatable; default all in the namespace)',
    })
    .option('hub-kubeconfig', {
      type: 'string',
      requiresArg: true,
      describe: 'kubeconfig of the hub (default: KUBECONFIG, else ~/.kube/config, else in-cluster)',
    })
    .option('token-namespace', {
      type: 'string',
      requiresArg: true,
      describe: 'Default namespace of the member service account (spec.cluster.config.namespace wins)',
    })
    .option('service-account', {
      type: 'string',
      requiresArg: true,
      describe: 'Default member service account (spec.cluster.config.serviceAccount wins)',
    })
    .option('audience', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe: 'Default token audiences (spec.cluster.config.audiences wins)',
    })
    .option('expiration-seconds', {
      type: 'string',
      requiresArg: true,
      describe: 'Default token lifetime, 600..2^32 (spec.cluster.config.expirationSeconds wins)',
    })
    .option('layout', {
      type: 'string',
      choices: TOKEN_SYNC_LAYOUTS,
      default: 'secretreader',
      describe:
        "Secret layout, as upstream's reader plugin of that name reads it: secretreader (<name>, key token) or kubeconfig-secretreader (<name>-kubeconfig, key value: a kubeconfig)",
    })
    .option('interval', {
      type: 'string',
      requiresArg: true,
      describe: 'Repeat every DURATION (e.g. 30s, 5m) until stopped; default: one pass',
    })
    .example(
      '$0 token sync -n fleet --service-account fleet-workload --token-namespace fleet',
      'one pass over all profiles in fleet',
    )
    .example('$0 token sync -n fleet --interval 1m', 'keep the Secrets fresh')
    .example(
      '$0 token sync -n fleet --layout kubeconfig-secretreader',
      'kubeconfigs for the kubeconfig-secretreader plugin',
    );
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const intervalMs =
    typeof args.interval === 'string'
      ? parseDuration(args.interval, { flag: '--interval', min: 1000, max: 86_400_000, code: 'ERR_TOKEN_SYNC_USAGE' })
      : undefined;
  const accessConfig = await loadAccessConfig(resolve(ctx.cwd, String(args[PROVIDER_FILE_OPTION])));
  // The hub for the whole run (with --interval, hours): a rotated token or certificate file is read again.
  const hub = await KubeClient.load(
    {
      kubeconfig: args['hub-kubeconfig'] as string | undefined,
      flag: '--hub-kubeconfig',
      what: "the hub's kubeconfig",
    },
    { env: ctx.env, cwd: ctx.cwd },
  );
  const { access } = hub;
  const namespace = (args.namespace as string | undefined) ?? access.namespace ?? 'default';
  const log = (line: string) => ctx.io.stderr.write(`${line}\n`);

  const bootstrap = async (
    resolved: Parameters<Parameters<typeof syncTokensOnce>[1]['bootstrap']>[0],
  ): Promise<KubeCredential> => {
    const credential = credentialFromExec(await runExecPlugin(resolved.exec, resolved.cluster, { env: ctx.env }));
    if (credential.kind !== 'none') return credential;
    throw new CredentialsError(
      'ERR_TOKEN_SYNC_BOOTSTRAP',
      `provider ${resolved.providerName} returned no usable credential`,
    );
  };
  const options = {
    namespace,
    accessConfig,
    names: (args.cluster as string[] | undefined) ?? [],
    layout: args.layout as TokenSyncLayout,
    defaults: {
      namespace: args['token-namespace'] as string | undefined,
      serviceAccount: args['service-account'] as string | undefined,
      audiences: args.audience as string[] | undefined,
      expirationSeconds: args['expiration-seconds'] as string | undefined,
    },
  };
  const deps = {
    hub: hub.send,
    hubServer: access.endpoint.server,
    bootstrap,
    // A member as the identity its provider's plugin gave for this pass: static.
    member: (endpoint: KubeEndpoint, credential: KubeCredential) => KubeClient.static(endpoint, credential),
    now: () => new Date(),
    log,
  };

  try {
    if (intervalMs === undefined) {
      const results = await syncTokensOnce(options, deps);
      return results.some((result) => result.outcome === 'failed') ? 1 : 0;
    }
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      while (!stop.signal.aborted) {
        await syncTokensOnce(options, deps).catch((error: unknown) => log(`pass failed: ${(error as Error).message}`));
        await sleep(intervalMs, undefined, { signal: stop.signal }).catch(() => undefined);
      }
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
    return 0;
  } finally {
    await hub.close();
  }
}
