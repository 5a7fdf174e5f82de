/**
 * The Kubernetes state's connection to the API server of the provider cluster: one keep-alive transport, re-made
 * when the credential changes (kubelet rotates a pod's token), and the flags that choose it (`--kubeconfig`,
 * `--context`, `--namespace`).
 */
import { CredentialsError, isCredentialsError } from '../../../core/errors.js';
import type { Env } from '../../../core/io.js';
import { loadKubeAccess, type KubeAccess } from '../../../kube/kubeconfig-loader.js';
import { createKubeTransport } from '../../../kube/transport.js';
import type { KubeRequest, KubeResponse } from '../../../kube/types.js';
import type { IssuerSettings } from '../../settings.js';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Talks to the API server as the issuer: one keep-alive transport, re-made when the credential changes (rotated tokens). */
export class StateConnection {
  private transport: ReturnType<typeof createKubeTransport>;
  private loadedAt = Date.now();
  private refreshing: Promise<void> | undefined;
  private credentialText: string;

  constructor(
    private access: KubeAccess,
    private readonly reload: (() => Promise<KubeAccess>) | undefined,
    private readonly timeoutMs = 10_000,
  ) {
    this.transport = this.make(access);
    this.credentialText = JSON.stringify(access.credential);
  }

  get source(): string {
    return this.access.source;
  }

  private make(access: KubeAccess): ReturnType<typeof createKubeTransport> {
    return createKubeTransport(access.endpoint, access.credential, { timeoutMs: this.timeoutMs });
  }

  /** Re-reads the kubeconfig or the pod's token once a minute (in the background): kubelet rotates the token file. */
  private maybeRefresh(): void {
    if (this.reload === undefined || this.refreshing !== undefined || Date.now() - this.loadedAt < 60_000) return;
    this.loadedAt = Date.now();
    this.refreshing = this.reload()
      .then((access) => {
        const text = JSON.stringify(access.credential);
        if (text === this.credentialText) return;
        const previous = this.transport;
        this.access = access;
        this.credentialText = text;
        this.transport = this.make(access);
        setTimeout(() => void previous.close(), this.timeoutMs).unref();
      })
      .catch(() => undefined)
      .finally(() => {
        this.refreshing = undefined;
      });
  }

  /** Sends; a transport failure (unreachable, timeout, TLS) becomes ERR_ISSUER_STATE_UNAVAILABLE. */
  async send(request: KubeRequest, what: string, signal?: AbortSignal): Promise<KubeResponse> {
    this.maybeRefresh();
    try {
      return await this.transport.send(request, signal === undefined ? {} : { signal });
    } catch (error) {
      if (isCredentialsError(error) && error.code.startsWith('ERR_KUBE_')) {
        throw new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', `${what}: ${error.message}`, {
          path: this.access.endpoint.server,
          cause: error,
        });
      }
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.refreshing;
    await this.transport.close();
  }
}

/** The connection for `--state kubernetes` from the flags: kubectl's order (in a pod: its ServiceAccount). */
export async function stateConnection(
  settings: IssuerSettings,
  deps: { env: Env; cwd: string },
): Promise<{ conn: StateConnection; namespace: string }> {
  const load = () =>
    loadKubeAccess(
      {
        kubeconfig: settings.kubeconfig,
        context: settings.kubeContext,
        flag: '--kubeconfig',
        what: "the issuer state's kubeconfig",
      },
      { env: deps.env, cwd: deps.cwd },
    );
  const access = await load();
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
  return { conn: new StateConnection(access, load), namespace };
}
