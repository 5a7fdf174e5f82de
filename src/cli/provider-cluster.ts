/**
 * The provider cluster as the consumer commands of the declarative tenant-cert flow reach it (`tenant apply
 * --to-cluster`, `identity import --from-cluster`): `--provider-kubeconfig`/`--provider-context` in kubectl's order
 * (then KUBECONFIG, ~/.kube/config, in-cluster) through the one Kubernetes client (src/kube/kube-client.ts), and the namespace of the Tenants (`--namespace`, else the context's).
 */
import { CredentialsError } from '../base/errors.js';
import { KubeClient } from '../kube/kube-client.js';
import { KUBE_RETRY } from '../kube/transport.js';
import type { SendKubeRequest } from '../kube/types.js';
import type { CommandArgs, CommandContext } from './command.js';

export interface ProviderCluster {
  send: SendKubeRequest;
  namespace: string;
  server: string;
  close(): Promise<void>;
}

export async function providerCluster(args: CommandArgs, ctx: CommandContext, usage: string): Promise<ProviderCluster> {
  const client = await KubeClient.load(
    {
      kubeconfig: args['provider-kubeconfig'] as string | undefined,
      context: args['provider-context'] as string | undefined,
      flag: '--provider-kubeconfig',
      what: "the provider cluster's kubeconfig",
    },
    { env: ctx.env, cwd: ctx.cwd },
    { timeoutMs: 30_000, retry: KUBE_RETRY },
  );
  const { access } = client;
  const namespace = (args['namespace'] as string | undefined) ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    await client.close();
    throw new CredentialsError(
      'ERR_USAGE',
      `${usage} needs --namespace (the namespace of the Tenants on the provider cluster)`,
      { path: '--namespace' },
    );
  }
  return { send: client.send, namespace, server: access.endpoint.server, close: () => client.close() };
}
