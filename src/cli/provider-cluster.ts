/**
 * The provider cluster as the consumer commands of the declarative tenant-cert flow reach it (`tenant apply
 * --to-cluster`, `identity import --from-cluster`): `--provider-kubeconfig`/`--provider-context` in kubectl's order
 * (then KUBECONFIG, ~/.kube/config, in-cluster) and the namespace of the Tenants (`--namespace`, else the context's).
 */
import { CredentialsError } from '../core/errors.js';
import { loadKubeAccess } from '../kube/kubeconfig-loader.js';
import { KUBE_RETRY, createKubeTransport } from '../kube/transport.js';
import type { SendKubeRequest } from '../kube/types.js';
import type { CommandArgs, CommandContext } from './command.js';

export interface ProviderCluster {
  send: SendKubeRequest;
  namespace: string;
  server: string;
  close(): Promise<void>;
}

export async function providerCluster(args: CommandArgs, ctx: CommandContext, usage: string): Promise<ProviderCluster> {
  const access = await loadKubeAccess(
    {
      kubeconfig: args['provider-kubeconfig'] as string | undefined,
      context: args['provider-context'] as string | undefined,
      flag: '--provider-kubeconfig',
      what: "the provider cluster's kubeconfig",
    },
    { env: ctx.env, cwd: ctx.cwd },
  );
  const namespace = (args['namespace'] as string | undefined) ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    throw new CredentialsError(
      'ERR_USAGE',
      `${usage} needs --namespace (the namespace of the Tenants on the provider cluster)`,
      { path: '--namespace' },
    );
  }
  const transport = createKubeTransport(access.endpoint, access.credential, { timeoutMs: 30_000, retry: KUBE_RETRY });
  return { send: transport.send, namespace, server: access.endpoint.server, close: transport.close };
}
