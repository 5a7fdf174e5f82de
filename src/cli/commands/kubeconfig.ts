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
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { parse as parseYaml } from 'yaml';
import { loadAccessConfig } from '../../library/access-config.js';
import { CredentialsError } from '../../core/errors.js';
import { renderKubeconfig } from '../../library/kubeconfig.js';
import { PROVIDER_FILE_OPTION, withProviderFileOption } from '../../library/provider-file-option.js';
import { resolveClusterAccess } from '../../library/resolve.js';
import type { ClusterProfile } from '../../library/types.js';
import type { CommandArgs, CommandContext } from '../command.js';

export function builder(parser: Argv): Argv<any> {
  return withProviderFileOption(parser)
    .option('profile', {
      type: 'string',
      requiresArg: true,
      describe: 'Read the ClusterProfile from this file (YAML or JSON)',
    })
    .option('namespace', {
      alias: 'n',
      type: 'string',
      requiresArg: true,
      describe: 'Namespace of the ClusterProfile on the hub (hub access from KUBECONFIG or in-cluster)',
    })
    .option('name', { type: 'string', requiresArg: true, describe: 'Name of the ClusterProfile on the hub' })
    .option('context-name', {
      type: 'string',
      requiresArg: true,
      describe: 'Name of the cluster, user and context (default: <namespace>/<name> of the profile)',
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
    .example('$0 kubeconfig -n fleet --name spoke-1 > spoke-1.kubeconfig', 'from the hub cluster');
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
  const options = typeof args['context-name'] === 'string' ? { name: args['context-name'] } : {};
  ctx.io.stdout.write(renderKubeconfig(access, options));
  return 0;
}

async function readProfile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    const reason = (cause as { code?: unknown }).code === 'ENOENT' ? 'no such file' : (cause as Error).message;
    throw new CredentialsError('ERR_PROFILE_READ', `cannot read ClusterProfile file ${file}: ${reason}`, {
      path: file,
      cause,
    });
  }
  let document: unknown;
  try {
    document = parseYaml(text, { uniqueKeys: true, prettyErrors: false });
  } catch (cause) {
    throw new CredentialsError(
      'ERR_PROFILE_PARSE',
      `cannot parse ClusterProfile file ${file}: ${(cause as Error).message.split('\n')[0]}`,
      { path: file, cause },
    );
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new CredentialsError(
      'ERR_PROFILE_PARSE',
      `cannot parse ClusterProfile file ${file}: expected one ClusterProfile object`,
      { path: file },
    );
  }
  return document;
}

async function fetchProfile(ctx: CommandContext, namespace: string, name: string): Promise<unknown> {
  const { connectHub } = await import('../hub.js');
  const hub = await connectHub(ctx.env);
  return hub.getClusterProfile(namespace, name);
}
