/**
 * The REST side of the Kubernetes state: the objects it keeps in NS (ConfigMaps and Secrets labelled
 * `credentials.clusterprofile.io/issuer-state`), their API paths, a paged list, and the coded error for an answer
 * an operation did not expect.
 */
import { CredentialsError } from '../../../base/errors.js';
import { statusMessage } from '../../../kube/status.js';
import type { KubeResponse } from '../../../kube/types.js';
import { KubeStatusError, listPages } from '../../../kube/watch.js';
import type { StateConnection } from './connection.js';

export const LABEL_KIND = 'credentials.clusterprofile.io/issuer-state';
export const LABEL_CONSUMER = 'credentials.clusterprofile.io/consumer-cluster-id';

export interface ObjectMeta {
  name?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface KubeObject {
  metadata?: ObjectMeta;
  data?: Record<string, string>;
}

/** The coded error for an answer the state operation did not expect. */
export function stateFailure(what: string, response: KubeResponse, path: string): CredentialsError {
  const said = statusMessage(response.body);
  const message = `${what}: the API server answered ${response.status}${said === undefined ? '' : ` (${said})`}`;
  if (response.status === 403 && said !== undefined && /exceeded quota/i.test(said)) {
    return new CredentialsError('ERR_ISSUER_BUSY', message, {
      path,
      hint: "the namespace's ResourceQuota on ConfigMaps bounds the spent-nonce records; try again later",
    });
  }
  if (response.status === 401 || response.status === 403) {
    return new CredentialsError('ERR_ISSUER_STATE_FORBIDDEN', message, {
      path,
      hint: "grant the issuer's ServiceAccount the Role of deploy/base/issuer-state-rbac.yaml in the state namespace",
    });
  }
  return new CredentialsError('ERR_ISSUER_STATE_UNAVAILABLE', message, { path });
}

/** The Kubernetes API paths of NS. */
export class Paths {
  constructor(readonly namespace: string) {}
  configMaps(query = ''): string {
    return `/api/v1/namespaces/${this.namespace}/configmaps${query}`;
  }
  configMap(name: string): string {
    return this.configMaps(`/${encodeURIComponent(name)}`);
  }
  secrets(): string {
    return `/api/v1/namespaces/${this.namespace}/secrets`;
  }
  secret(name: string): string {
    return `${this.secrets()}/${encodeURIComponent(name)}`;
  }
}

/**
 * Hands every item of a label-selected ConfigMap list to `onItem`, page by page (500 a page) through the one list of
 * src/kube/watch.ts (an expired continue token starts the list over). An answer other than 200 is a
 * {@link stateFailure}.
 */
export async function listConfigMaps(
  conn: StateConnection,
  paths: Paths,
  selector: string,
  what: string,
  onItem: (object: KubeObject) => void,
): Promise<void> {
  const path = paths.configMaps(`?labelSelector=${encodeURIComponent(selector)}`);
  try {
    await listPages((request, options) => conn.send(request, what, options?.signal), path, {
      signal: new AbortController().signal,
      pageSize: 500,
      onPage: (page) => {
        for (const item of Array.isArray(page.items) ? page.items : []) onItem(item as KubeObject);
      },
    });
  } catch (error) {
    if (!(error instanceof KubeStatusError)) throw error;
    throw stateFailure(what, { status: error.status, body: error.body }, paths.configMaps());
  }
}
