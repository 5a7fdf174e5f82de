/**
 * `clusterprofile identity import FILE --key-file KEY [--cluster-id ID] [--identity-dir DIR] [--kubeconfig OUT]`:
 * the consumer's last step of the manual flow. Reads an Identity (ours or Liqo's `authentication.liqo.io/v1beta1`,
 * YAML or JSON; `-` for stdin; Liqo's must name its apiServer, as Liqo needs), checks that its certificate is for our cluster ID and our key and not expired, and
 * stores it where `clusterprofile-tenant-cert` looks first (`DIR/<consumer>/<provider>.yaml`, 0600). With
 * `--kubeconfig`, also writes a kubeconfig for the Identity's API server whose user runs the plugin: both or neither (a
 * kubeconfig that cannot be written undoes the store, and the error says so).
 *
 * @example
 * ```sh
 * clusterprofile identity import identity.yaml --key-file consumer.key --kubeconfig member-1.kubeconfig
 * kubectl --kubeconfig member-1.kubeconfig get --raw /version
 * ```
 */
import { readFile, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Argv } from 'yargs';
import { writeFileAtomic } from '../../base/private-files/atomic-write.js';
import { CredentialsError, errno } from '../../base/errors.js';
import { renderKubeconfig } from '../../resolve/kubeconfig-document.js';
import type { ResolvedClusterAccess } from '../../resolve/types.js';
import {
  checkClusterId,
  defaultIdentityDir,
  identityFile,
  loadClusterFlow,
  loadIdentityImport,
  parsePrivateKeyPem,
  readKeyFile,
  type ParsedIdentity,
} from '../../providers/tenant-cert/index.js';
import { providerCluster } from '../provider-cluster.js';
import { actionsUsage, type ActionSpec, type CommandArgs, type CommandContext } from '../command.js';
import { readInput } from '../input.js';

export const actions = {
  import: {
    usage:
      '$0 identity import FILE|--from-cluster --key-file KEY [--cluster-id ID] [--identity-dir DIR] [--kubeconfig OUT] [--namespace NS --provider-kubeconfig FILE --provider-context NAME]',
    describe:
      'Store an Identity (ours or Liqo\'s; YAML or JSON; "-" for stdin; or --from-cluster: the Identity resource of this cluster\'s Tenant on the provider cluster) where clusterprofile-tenant-cert serves it from.',
  },
} as const satisfies Record<string, ActionSpec>;

export function builder(parser: Argv): Argv<object> {
  return parser
    .usage(actionsUsage(actions, 'The consumer side of the manual tenant-cert flow.'))
    .positional('action', { type: 'string', choices: Object.keys(actions), describe: 'what to do' })
    .positional('file', { type: 'string', describe: 'the Identity document ("-": stdin)' })
    .option('key-file', {
      type: 'string',
      demandOption: true,
      requiresArg: true,
      describe: "this cluster's private key (PKCS#8 PEM, 0600)",
    })
    .option('cluster-id', {
      type: 'string',
      requiresArg: true,
      describe: "this cluster's ID (default: the certificate's CN, which must match)",
    })
    .option('identity-dir', {
      type: 'string',
      requiresArg: true,
      describe: 'the store (default ~/.kube/clusterprofile/identities)',
    })
    .option('kubeconfig', {
      type: 'string',
      requiresArg: true,
      describe: "also write a kubeconfig for the Identity's API server to this file",
    })
    .option('server', {
      type: 'string',
      requiresArg: true,
      describe: "API server URL for --kubeconfig (default: the Identity's apiServer)",
    })
    .option('from-cluster', {
      type: 'boolean',
      default: false,
      describe:
        'read the Identity from the provider cluster (the declarative flow) instead of FILE; needs --cluster-id',
    })
    .option('namespace', {
      type: 'string',
      requiresArg: true,
      describe: "--from-cluster: the namespace of the Tenants (default: the context's)",
    })
    .option('provider-kubeconfig', {
      type: 'string',
      requiresArg: true,
      describe:
        '--from-cluster: kubeconfig for the provider cluster (default: KUBECONFIG, else ~/.kube/config, else in-cluster)',
    })
    .option('provider-context', { type: 'string', requiresArg: true, describe: '--from-cluster: its context' })
    .option('plugin-command', {
      type: 'string',
      default: 'clusterprofile-tenant-cert',
      requiresArg: true,
      describe: 'the plugin command the kubeconfig runs',
    });
}

/** The kubeconfig for an imported Identity: its API server and CA, a user running the plugin with our flags. */
export function identityKubeconfig(
  identity: ParsedIdentity,
  options: { server: string; keyFile: string; identityDir: string; command: string },
): string {
  const access: ResolvedClusterAccess = {
    providerName: 'tenant-cert',
    profile: { name: identity.providerClusterID },
    cluster: {
      server: options.server,
      ...(identity.caPem === undefined
        ? {}
        : { 'certificate-authority-data': Buffer.from(identity.caPem).toString('base64') }),
      ...(identity.proxyURL === undefined ? {} : { 'proxy-url': identity.proxyURL }),
      config: { providerClusterID: identity.providerClusterID },
    },
    exec: {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: options.command,
      args: [
        '--cluster-id',
        identity.consumerClusterID,
        '--key-file',
        options.keyFile,
        '--identity-dir',
        options.identityDir,
      ],
      env: [],
      provideClusterInfo: true,
      interactiveMode: 'Never',
      installHint: 'clusterprofile-tenant-cert comes with the clusterprofile-credentials npm package',
    },
  };
  return renderKubeconfig(access, { name: identity.providerClusterID });
}

/** The text of the Identity stored for the pair before this import, or undefined when there was none. */
async function previousIdentity(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw new CredentialsError(
      'ERR_TENANT_CERT_IDENTITY_STORE',
      `cannot read the Identity stored before: ${(error as Error).message}`,
      { path: file, cause: error },
    );
  }
}

/**
 * Writes the kubeconfig; when that fails, puts the store back as it was (the previous Identity, or none) and says
 * which state it is in: an Identity without the kubeconfig the user asked for must not pass unnoticed.
 */
async function writeKubeconfigOrUndo(
  path: string,
  text: string,
  stored: string,
  previous: string | undefined,
): Promise<void> {
  try {
    await writeFileAtomic(path, text, 0o600);
    return;
  } catch (cause) {
    let outcome: string;
    try {
      if (previous === undefined) await unlink(stored);
      else await writeFileAtomic(stored, previous, 0o600);
      outcome =
        previous === undefined
          ? 'the Identity was not stored'
          : 'the Identity was not stored (the one imported before is kept)';
    } catch (undo) {
      outcome = `the Identity WAS stored at ${stored} (undoing that failed: ${(undo as Error).message})`;
    }
    throw new CredentialsError(
      'ERR_IDENTITY_KUBECONFIG',
      `cannot write the kubeconfig: ${(cause as Error).message}; ${outcome}`,
      {
        path,
        cause,
        hint: 'fix --kubeconfig (a writable file path) and import again',
      },
    );
  }
}

/** `--from-cluster`: the Identity resource the issuer wrote for this cluster's Tenant, as document text. */
async function identityFromCluster(args: CommandArgs, ctx: CommandContext): Promise<{ text: string; source: string }> {
  const clusterID = args['cluster-id'];
  if (typeof clusterID !== 'string' || clusterID === '') {
    throw new CredentialsError(
      'ERR_USAGE',
      "identity import --from-cluster needs --cluster-id (the name of this cluster's Tenant)",
      { path: '--cluster-id' },
    );
  }
  const consumerClusterID = checkClusterId(clusterID, '--cluster-id');
  const cluster = await providerCluster(args, ctx, 'identity import --from-cluster');
  try {
    const { readIdentityFromCluster } = await loadClusterFlow();
    const read = await readIdentityFromCluster({
      send: cluster.send,
      namespace: cluster.namespace,
      consumerClusterID,
      now: () => new Date(),
    });
    return { text: read.text, source: `${read.source} on ${cluster.server}` };
  } finally {
    await cluster.close();
  }
}

export async function run(args: CommandArgs, ctx: CommandContext): Promise<number> {
  // yargs hands a lone "-" positional over as "".
  const file = args['file'] === '' ? '-' : args['file'];
  const fromCluster = args['from-cluster'] === true;
  if (fromCluster && typeof file === 'string') {
    throw new CredentialsError('ERR_USAGE', 'give either FILE or --from-cluster, not both', { path: '--from-cluster' });
  }
  if (!fromCluster && typeof file !== 'string') {
    throw new CredentialsError('ERR_IDENTITY_READ', 'which Identity? give a FILE (or - for stdin), or --from-cluster', {
      path: 'FILE',
    });
  }
  const keyFile = resolve(ctx.cwd, String(args['key-file']));
  const identityDir = defaultIdentityDir(ctx.env, args['identity-dir'] as string | undefined, ctx.cwd);
  const { text, source } = fromCluster
    ? await identityFromCluster(args, ctx)
    : await readInput(
        file as string,
        ctx,
        (cause, path) =>
          new CredentialsError('ERR_IDENTITY_READ', `cannot read the Identity: ${(cause as Error).message}`, {
            path,
            cause,
          }),
      );
  const { checkCertificate, parseIdentity, storeIdentity } = await loadIdentityImport();
  const identity = parseIdentity(text, source);
  if (identity.format === 'liqo' && identity.apiServer === undefined) {
    // Liqo's consumer forges the Identity's kubeconfig from apiServer alone: without it the kubeconfig names no server.
    throw new CredentialsError(
      'ERR_TENANT_CERT_IDENTITY_INVALID',
      `${source}: a Liqo Identity must name the provider's API server (spec.authParams.apiServer); Liqo cannot use one without it`,
      {
        path: '$.spec.authParams.apiServer',
        hint: 'answer the Tenant with clusterprofile tenant accept --api-server-url URL',
      },
    );
  }

  const clusterID = args['cluster-id'] as string | undefined;
  if (clusterID !== undefined && clusterID !== identity.consumerClusterID) {
    throw new CredentialsError(
      'ERR_IDENTITY_MISMATCH',
      `${source} is an Identity for cluster ${identity.consumerClusterID}, not for --cluster-id ${clusterID}`,
      { path: '--cluster-id' },
    );
  }
  const { keyPem } = readKeyFile(keyFile);
  const checked = checkCertificate(identity.certificatePem, {
    clusterID: identity.consumerClusterID,
    privateKey: parsePrivateKeyPem(keyPem, keyFile, { flag: '--key-file', code: 'ERR_TENANT_CERT_KEY_FILE' }),
    now: new Date(),
    minRemainingMs: 60_000,
    source,
    allowPastRenewal: true,
  });

  let kubeconfigPath: string | undefined;
  let kubeconfig: string | undefined;
  if (args['kubeconfig'] !== undefined) {
    const server = (args['server'] as string | undefined) ?? identity.apiServer;
    if (server === undefined) {
      throw new CredentialsError('ERR_IDENTITY_KUBECONFIG', `${source} names no apiServer; pass --server`, {
        path: '--server',
      });
    }
    kubeconfigPath = resolve(ctx.cwd, String(args['kubeconfig']));
    kubeconfig = identityKubeconfig(identity, {
      server,
      keyFile,
      identityDir,
      command: String(args['plugin-command']),
    });
  }

  const previous =
    kubeconfig === undefined
      ? undefined
      : await previousIdentity(identityFile(identityDir, identity.consumerClusterID, identity.providerClusterID));
  const stored = await storeIdentity(identityDir, identity, text);
  if (kubeconfigPath !== undefined && kubeconfig !== undefined) {
    await writeKubeconfigOrUndo(kubeconfigPath, kubeconfig, stored, previous);
  }
  ctx.io.stderr.write(
    `imported the Identity of ${identity.providerClusterID} for ${identity.consumerClusterID} (certificate valid until ${checked.notAfter.toISOString()})\n`,
  );
  ctx.io.stdout.write(`${stored}\n`);
  return 0;
}
