/**
 * The Kubernetes state's connection to the API server of the provider cluster: the package's one Kubernetes client
 * (src/kube/kube-client.ts: a rotated token or certificate file is read again within a minute and after a 401), its
 * failures named as the state's, and the flags that choose it (`--kubeconfig`, `--context`, `--namespace`).
 */
import { CredentialsError, isCredentialsError } from '../../../base/errors.js';
import type { Env } from '../../../base/io.js';
import { KubeClient } from '../../../kube/kube-client.js';
import type { KubeRequest, KubeResponse } from '../../../kube/types.js';
import type { IssuerSettings } from '../../settings.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Talks to the API server as the issuer, through one {@link KubeClient}. */
export class StateConnection {
  readonly #client: KubeClient;

  constructor(client: KubeClient) {
    this.#client = client;
  }

  get source(): string {
    return this.#client.source;
  }

  /** Sends; a transport failure (unreachable, timeout, TLS) becomes ERR_ISSUER_STATE_UNAVAILABLE. */
  async send(request: KubeRequest, what: string, signal?: AbortSignal): Promise<KubeResponse> {
    try {
      return await this.#client.send(request, signal === undefined ? {} : { signal });
    } catch (error) {
      if (isCredentialsError(error) && error.code.startsWith('ERR_KUBE_')) {
        throw new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', `${what}: ${error.message}`, {
          path: this.#client.access.endpoint.server,
          cause: error,
        });
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}

/** The connection for `--state kubernetes` from the flags: kubectl's order (in a pod: its ServiceAccount). */
export async function stateConnection(
  settings: IssuerSettings,
  deps: { env: Env; cwd: string },
): Promise<{ conn: StateConnection; namespace: string }> {
  const client = await KubeClient.load(
    {
      kubeconfig: settings.kubeconfig,
      context: settings.kubeContext,
      flag: '--kubeconfig',
      what: "the issuer state's kubeconfig",
    },
    { env: deps.env, cwd: deps.cwd },
    { timeoutMs: 10_000 },
  );
  const { access } = client;
  const namespace = settings.namespace ?? access.namespace;
  if (namespace === undefined || namespace === '') {
    throw new CredentialsError(
      'ERR_USAGE',
      '--state kubernetes needs --namespace (the kubeconfig context names none)',
      { path: '--namespace' },
    );
  }
  if (!DNS_LABEL.test(namespace) || namespace.length > 63) {
    throw new CredentialsError(
      'ERR_USAGE',
      `--namespace ${JSON.stringify(namespace)} is not a namespace name (a DNS label)`,
      { path: '--namespace' },
    );
  }
  return { conn: new StateConnection(client), namespace };
}
