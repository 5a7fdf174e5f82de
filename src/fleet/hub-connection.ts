/**
 * The fleet's connection to the hub (the CLI's one-profile read is src/cli/hub-profiles.ts): list the ClusterProfiles
 * of one namespace (paged, v1alpha1 else v1alpha2) and watch them from a resourceVersion with bookmarks, with the
 * fleet's error codes (`ERR_FLEET_HUB_*`). Hub access is the package's one Kubernetes client (src/kube/kube-client.ts:
 * kubectl's order — flag, KUBECONFIG merged, ~/.kube/config, in-cluster; a rotated token or certificate file read
 * again within a minute and after a 401; a hub user with `exec` — EKS, GKE, OIDC logins — run through the exec
 * authenticator, refreshed before expiry and after a 401). Lists and watches are src/kube/watch.ts's: pages, the
 * watch streamed through the HTTP seam with an idle deadline ({@link DEFAULT_WATCH_IDLE_MS}: the API server sends a
 * bookmark about once a minute, so a silent watch is dead and is reopened from its resourceVersion), a server-side
 * timeout of 5 to 10 minutes. @kubernetes/client-node is not needed for any of it.
 */
import { CredentialsError, formatError, isCredentialsError } from '../base/errors.js';
import type { Env } from '../base/io.js';
import { isRecord } from '../base/record.js';
import { CLUSTERPROFILE_GROUP, CLUSTERPROFILE_PLURAL, CLUSTERPROFILE_VERSIONS } from '../kube/cluster-profile.js';
import { KubeClient } from '../kube/kube-client.js';
import { loadInClusterAccess, type KubeAccess } from '../kube/kubeconfig-loader.js';
import { statusMessage } from '../kube/status.js';
import { KUBE_RETRY } from '../kube/transport.js';
import type { KubeResponse, SendKubeRequest } from '../kube/types.js';
import {
  DEFAULT_WATCH_IDLE_MS,
  KubeStatusError,
  listPages,
  MAX_EVENT_BYTES,
  WatchGone,
  watchOnce,
  WatchStreamError,
} from '../kube/watch.js';

export { DEFAULT_WATCH_IDLE_MS };

/** The resource every hub error names. */
export const CLUSTERPROFILE_RESOURCE = `${CLUSTERPROFILE_PLURAL}.${CLUSTERPROFILE_GROUP}`;
export type ClusterProfileVersion = (typeof CLUSTERPROFILE_VERSIONS)[number];

/** Items per list page (client-go's reflector pages by 500 too). */
export const DEFAULT_PAGE_SIZE = 500;

export type HubVerb = 'list' | 'watch';

/** One watch event; `object` is the ClusterProfile (or, for `ERROR`, a Status). */
export interface HubWatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  object: Record<string, unknown>;
}

/** The resourceVersion the watch started from is gone (HTTP 410, or an ERROR event with code 410): list again. */
export class HubGoneError extends Error {
  override readonly name = 'HubGoneError';
}

/** How a fleet reaches its hub: a kubeconfig and context or loaded access, plus list and watch tuning. */
export interface FleetHubOptions {
  /** The hub's kubeconfig file (alone); default: KUBECONFIG, else ~/.kube/config, else in-cluster. */
  kubeconfig?: string;
  /** A context instead of the current one. */
  context?: string;
  /**
   * Only the pod's service account (the token re-read as it rotates), whatever KUBECONFIG and ~/.kube/config hold;
   * `kubeconfig` and `context` are then ignored. Rejects with `ERR_IN_CLUSTER_UNAVAILABLE` outside a pod.
   */
  inCluster?: boolean;
  /**
   * Only the ClusterProfiles this label selector matches (Kubernetes syntax, e.g. `env=prod,tier!=edge`), chosen by
   * the hub on list and watch: a profile whose labels stop matching is removed, one that starts matching is added.
   */
  labelSelector?: string;
  /**
   * Hub access already loaded (then `kubeconfig` and `context` are ignored, and its credential is not read again).
   *
   * @internal The loader that makes one is not exported.
   */
  access?: KubeAccess;
  /** Deadline of one list page, retries included (default 30 s). */
  requestTimeoutMs?: number;
  /** A watch with no event or bookmark for this long is restarted (default 180 000: 3 minutes). */
  watchIdleMs?: number;
  /** ClusterProfiles per list page (default 500). */
  pageSize?: number;
}

interface HubConnectionDeps {
  env: Env;
  cwd: string;
  /** Random source for the watch's server-side timeout. */
  random: () => number;
}

/** One hub connection: list and watch ClusterProfiles in one namespace, as the hub identity of its kubeconfig. */
export class HubConnection {
  readonly #client: KubeClient;
  readonly #options: FleetHubOptions;
  readonly #deps: HubConnectionDeps;
  #version: ClusterProfileVersion | undefined;

  /** Hub access already found; {@link open} finds it. */
  constructor(client: KubeClient, options: FleetHubOptions, deps: HubConnectionDeps) {
    this.#client = client;
    this.#options = options;
    this.#deps = deps;
  }

  /** Finds hub access (ERR_KUBECONFIG_* / ERR_IN_CLUSTER_UNAVAILABLE when there is none). */
  static async open(options: FleetHubOptions, deps: HubConnectionDeps): Promise<HubConnection> {
    const clientOptions = {
      retry: KUBE_RETRY,
      ...(options.requestTimeoutMs === undefined ? {} : { timeoutMs: options.requestTimeoutMs }),
      exec: { env: deps.env },
    };
    let client: KubeClient;
    if (options.access !== undefined) {
      client = KubeClient.fromAccess(options.access, undefined, clientOptions);
    } else if (options.inCluster === true) {
      const inCluster = () => loadInClusterAccess({ env: deps.env, cwd: deps.cwd });
      client = KubeClient.fromAccess(await inCluster(), inCluster, clientOptions);
    } else {
      client = await KubeClient.load(
        {
          ...(options.kubeconfig === undefined ? {} : { kubeconfig: options.kubeconfig }),
          ...(options.context === undefined ? {} : { context: options.context }),
          what: "the hub's kubeconfig",
          allowExec: true,
        },
        { env: deps.env, cwd: deps.cwd },
        clientOptions,
      );
    }
    return new HubConnection(client, options, deps);
  }

  /** The hub's API server URL (without userinfo), for messages. */
  get server(): string {
    return this.#client.server;
  }

  /** Where the hub access came from (`context "hub" of /path`), for messages. */
  get source(): string {
    return this.#client.source;
  }

  /** Sends one request to the hub as the fleet's identity (a sharded fleet's Leases). */
  get send(): SendKubeRequest {
    return this.#client.send;
  }

  /** The ClusterProfile version the hub serves (after the first list). */
  get version(): ClusterProfileVersion | undefined {
    return this.#version;
  }

  /**
   * Every ClusterProfile of `namespace`, page by page (each page is handed to `onPage` as it arrives and dropped, so a
   * large inventory's list never sits in memory at once), and the list's resourceVersion (where a watch starts). An expired
   * continue token starts the list over: `onStart` runs before each attempt. The first list asks for v1alpha1 and,
   * when the hub does not serve it, v1alpha2; later lists ask for the same.
   */
  async list(
    namespace: string,
    signal: AbortSignal,
    handlers: { onStart(): void; onPage(items: unknown[]): void },
  ): Promise<{ resourceVersion: string; version: ClusterProfileVersion }> {
    const versions = this.#version === undefined ? CLUSTERPROFILE_VERSIONS : [this.#version];
    for (const [index, version] of versions.entries()) {
      let pages = 0;
      try {
        // The hub user's exec plugin runs here (a failure of it is ERR_FLEET_HUB_FORBIDDEN, below).
        await this.#client.authenticate();
        const { resourceVersion } = await listPages(
          this.#client.send,
          collectionPath(version, namespace, this.#options.labelSelector),
          {
            signal,
            pageSize: this.#options.pageSize ?? DEFAULT_PAGE_SIZE,
            onStart: handlers.onStart,
            onPage: (page) => {
              if (!Array.isArray(page.items)) {
                throw new CredentialsError(
                  'ERR_FLEET_HUB_REQUEST',
                  `the hub ${this.server} answered the list of ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} without items`,
                  {
                    path: this.server,
                  },
                );
              }
              // A list's items may leave apiVersion and kind to the list.
              const items = page.items.map((item: unknown) =>
                isRecord(item) ? { apiVersion: page.apiVersion, kind: 'ClusterProfile', ...item } : item,
              );
              pages += 1;
              this.#version = version;
              handlers.onPage(items);
            },
          },
        );
        return { resourceVersion, version };
      } catch (error) {
        // A version the hub does not serve answers 404 with a Status that names no object.
        if (error instanceof KubeStatusError && error.status === 404 && pages === 0 && index < versions.length - 1)
          continue;
        if (error instanceof KubeStatusError && error.status === 410) {
          throw new CredentialsError(
            'ERR_FLEET_HUB_REQUEST',
            `cannot list ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} on the hub ${this.server}: the list kept expiring`,
            { path: this.server },
          );
        }
        throw this.#failure('list', namespace, error, signal);
      }
    }
    throw new Error('unreachable: the last version answers or throws');
  }

  /**
   * Watches from `resourceVersion` until the stream ends (the server's timeout, a cut connection, silence past the
   * idle deadline: resolves with the number of events seen), `signal` aborts (resolves), the resourceVersion is gone
   * (rejects with {@link HubGoneError}) or the watch cannot be opened (rejects with a coded error). `onEvent` gets
   * each event in order.
   */
  async watch(
    namespace: string,
    resourceVersion: string,
    signal: AbortSignal,
    onEvent: (event: HubWatchEvent) => void,
  ): Promise<number> {
    const version = this.#version ?? CLUSTERPROFILE_VERSIONS[0];
    try {
      await this.#client.authenticate();
      const { events } = await watchOnce<Record<string, unknown>>({
        send: this.#client.send,
        stream: (path, onChunk, options) => this.#client.stream(path, onChunk, options),
        path: collectionPath(version, namespace, this.#options.labelSelector),
        resourceVersion,
        signal,
        random: this.#deps.random,
        idleMs: this.#options.watchIdleMs ?? DEFAULT_WATCH_IDLE_MS,
        onEvent: (event) => onEvent({ type: event.type, object: event.object }),
      });
      return events;
    } catch (error) {
      if (signal.aborted) return 0;
      if (error instanceof WatchGone) throw new HubGoneError(error.message);
      throw this.#failure('watch', namespace, error, signal);
    }
  }

  /** A list's or watch's failure with the fleet's codes. */
  #failure(verb: HubVerb, namespace: string, error: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return error;
    if (isCredentialsError(error) && error.code.startsWith('ERR_EXEC_')) {
      return new CredentialsError(
        'ERR_FLEET_HUB_FORBIDDEN',
        `cannot ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace}: the hub user's exec plugin failed: ${formatError(error)}`,
        {
          path: this.#client.access.exec?.path ?? this.source,
          cause: error,
        },
      );
    }
    if (error instanceof KubeStatusError)
      return this.#statusError(verb, namespace, { status: error.status, body: error.body });
    if (error instanceof WatchStreamError) {
      return new CredentialsError(
        'ERR_FLEET_HUB_REQUEST',
        error.reason === 'too-large'
          ? `the hub ${this.server} sent a watch event of ${CLUSTERPROFILE_RESOURCE} larger than ${MAX_EVENT_BYTES} bytes`
          : `the hub ${this.server} sent a watch event of ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} that is not JSON`,
        {
          path: this.server,
        },
      );
    }
    if (isCredentialsError(error) && error.code.startsWith('ERR_KUBE_')) {
      return new CredentialsError(
        'ERR_FLEET_HUB_UNREACHABLE',
        `cannot ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace}: ${error.message}`,
        {
          path: this.server,
          cause: error,
          hint: `check the hub's kubeconfig (${this.source}) and that the API server is up`,
        },
      );
    }
    return error;
  }

  #statusError(verb: HubVerb, namespace: string, response: KubeResponse): CredentialsError {
    const detail = statusMessage(response.body) ?? `HTTP ${response.status}`;
    if (response.status === 401 || response.status === 403) {
      return new CredentialsError(
        'ERR_FLEET_HUB_FORBIDDEN',
        `the hub ${this.server} refused to ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (HTTP ${response.status}): ${detail}`,
        {
          path: this.server,
          hint:
            response.status === 401
              ? `the hub did not accept the credential of ${this.source}`
              : `grant the hub identity get, list and watch on ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (a Role and RoleBinding)`,
        },
      );
    }
    if (response.status === 404) {
      return new CredentialsError(
        'ERR_FLEET_HUB_REQUEST',
        `the hub ${this.server} cannot ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (HTTP 404): ${detail}`,
        {
          path: this.server,
          hint: `the hub serves no ClusterProfiles (${CLUSTERPROFILE_GROUP} ${CLUSTERPROFILE_VERSIONS.join(' or ')}): is the CRD installed?`,
        },
      );
    }
    return new CredentialsError(
      'ERR_FLEET_HUB_REQUEST',
      `the hub ${this.server} failed to ${verb} ${CLUSTERPROFILE_RESOURCE} in namespace ${namespace} (HTTP ${response.status}): ${detail}`,
      {
        path: this.server,
      },
    );
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}

function collectionPath(version: string, namespace: string, labelSelector: string | undefined): string {
  const collection = `/apis/${CLUSTERPROFILE_GROUP}/${version}/namespaces/${encodeURIComponent(namespace)}/${CLUSTERPROFILE_PLURAL}`;
  return labelSelector === undefined || labelSelector === ''
    ? collection
    : `${collection}?labelSelector=${encodeURIComponent(labelSelector)}`;
}
