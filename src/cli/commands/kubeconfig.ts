/**
 * `clusterprofile kubeconfig`: print a kubeconfig for one ClusterProfile whose user runs the exec plugin the
 * providers file selects, so `kubectl --kubeconfig` reaches the member cluster exactly as a controller would.
 *
 * @example
 * ```sh
 * clusterprofile kubeconfig --profile spoke-1.yaml --clusterprofile-provider-file providers.json > spoke-1.kubeconfig
 * KUBECONFIG=~/.kube/hub clusterprofile kubeconfig --namespace fleet --name spoke-1 > spoke-1.kubeconfig
 * kubectl --kubeconfig spoke-1.kubeconfig get nodes
 * ```
 */
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { loadAccessConfig } from '../../resolve/access-config.js';
import { CredentialsError } from '../../base/errors.js';
import { readClusterProfileFile, type ClusterProfileObject } from '../../kube/cluster-profile.js';
import { renderKubeconfig } from '../../resolve/kubeconfig-document.js';
import { PROVIDER_FILE_OPTION, withProviderFileOption } from '../../resolve/provider-file-option.js';
import { resolveClusterAccess } from '../../resolve/cluster-access.js';
import type { ClusterProfile, InteractiveMode } from '../../resolve/types.js';
import type { CommandArgs, CommandContext } from '../command.js';

const INTERACTIVE_MODES: readonly InteractiveMode[] = ['IfAvailable', 'Always', 'Never'];

/** ERR_PROFILE_READ and the other reading errors come from src/kube/cluster-profile.ts. */
export type KubeconfigCommandErrorCode = 'ERR_PROFILE_PARSE';

export function builder(parser: Argv): Argv<object> {
  return withProviderFileOption(parser)
    .option('profile', {
      type: 'string',
      requiresArg: true,
      describe: 'Read the ClusterProfile from this file (YAML or JSON; a List holding one profile is accepted)',
    })
    .option('namespace', {
      alias: 'n',
      type: 'string',
      requiresArg: true,
      describe:
        'Namespace of the ClusterProfile on the hub (hub access: KUBECONFIG, else ~/.kube/config, else in-cluster)',
    })
    .option('name', { type: 'string', requiresArg: true, describe: 'Name of the ClusterProfile on the hub' })
    .option('context-name', {
      type: 'string',
      requiresArg: true,
      describe: 'Name of the cluster, user and context (default: <namespace>/<name> of the profile)',
    })
    .option('interactive-mode', {
      type: 'string',
      choices: INTERACTIVE_MODES,
      requiresArg: true,
      describe:
        "The exec config's interactiveMode: IfAvailable or Always let kubectl hand the plugin your terminal for a login " +
        "(oidc device code, PKCE). Default: the providers file's, else Never",
    })
    .conflicts('profile', ['namespace', 'name'])
    .check((args) => {
      const fromFile = args.profile !== undefined;
      const fromHub = args.namespace !== undefined || args.name !== undefined;
      if (!fromFile && !fromHub) throw new Error('pass --profile FILE, or --namespace NS --name NAME');
      if (fromHub && (args.namespace === undefined || args.name === undefined)) {
        throw new Error('--namespace and --name go together');
      }
      return true;
    })
    .example('$0 kubeconfig --profile spoke-1.yaml > spoke-1.kubeconfig', 'from a file')
    .example('$0 kubeconfig -n fleet --name spoke-1 > spoke-1.kubeconfig', 'from the hub cluster')
    .example(
      '$0 kubeconfig --profile spoke-1.yaml --interactive-mode IfAvailable > spoke-1.kubeconfig',
      'for a person who logs in from kubectl',
    );
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  const providerFile = resolve(ctx.cwd, String(args[PROVIDER_FILE_OPTION]));
  const accessConfig = await loadAccessConfig(providerFile);
  const profile =
    typeof args.profile === 'string'
      ? await readProfile(resolve(ctx.cwd, args.profile))
      : await fetchProfile(ctx, String(args.namespace), String(args.name));
  const access = resolveClusterAccess(profile as ClusterProfile, accessConfig, {
    warn: (message) => ctx.io.stderr.write(`warning: ${message}\n`),
  });
  // The resolution gives a controller's exec config (interactiveMode Never); a person's kubeconfig keeps the mode the
  // providers file asks for, or the flag's.
  const fromFile = accessConfig.providers.find((provider) => provider.name === access.providerName)?.execConfig
    ?.interactiveMode;
  const interactiveMode = (args['interactive-mode'] as InteractiveMode | undefined) ?? fromFile ?? 'Never';
  const options = {
    interactiveMode,
    ...(typeof args['context-name'] === 'string' ? { name: args['context-name'] } : {}),
  };
  ctx.io.stdout.write(renderKubeconfig(access, options));
  return 0;
}

/** The one ClusterProfile of a file (a single profile, or a List holding exactly one). */
async function readProfile(file: string): Promise<ClusterProfileObject> {
  const profiles = await readClusterProfileFile(file);
  if (profiles.length !== 1) {
    const names = profiles.map((profile) =>
      `${profile.metadata.namespace ?? ''}/${profile.metadata.name}`.replace(/^\//, ''),
    );
    throw new CredentialsError<KubeconfigCommandErrorCode>(
      'ERR_PROFILE_PARSE',
      `ClusterProfile file ${file} holds ${profiles.length === 0 ? 'no ClusterProfile' : `${profiles.length} ClusterProfiles (${names.join(', ')})`}: expected one`,
      { path: file, hint: 'give a file with one ClusterProfile, or read it from the hub with --namespace and --name' },
    );
  }
  return profiles[0]!;
}

async function fetchProfile(ctx: CommandContext, namespace: string, name: string): Promise<ClusterProfileObject> {
  const { connectHub } = await import('../hub-profiles.js');
  const hub = await connectHub(ctx.env, ctx.cwd, { stderr: ctx.io.stderr });
  return hub.getClusterProfile(namespace, name);
}
