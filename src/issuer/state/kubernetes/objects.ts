/**
 * The REST side of the Kubernetes state: the objects it keeps in NS (ConfigMaps and Secrets labelled
 * `credentials.clusterprofile.io/issuer-state`), their API paths, a paged list, and the coded error for an answer
 * an operation did not expect.
 */
import { CredentialsError } from '../../../base/errors.js';
import { statusMessage } from '../../../kube/status.js';
import type { KubeResponse } from '../../../kube/types.js';
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
interface KubeList {
  items?: KubeObject[];
  metadata?: { continue?: string };
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

/** Every item of a label-selected ConfigMap list, page by page (500 a page). */
export async function* listConfigMaps(
  conn: StateConnection,
  paths: Paths,
  selector: string,
  what: string,
): AsyncGenerator<KubeObject> {
  let next: string | undefined;
  do {
    const query = `?labelSelector=${encodeURIComponent(selector)}&limit=500${next === undefined ? '' : `&continue=${encodeURIComponent(next)}`}`;
    const response = await conn.send({ method: 'GET', path: paths.configMaps(query) }, what);
    if (response.status !== 200) throw stateFailure(what, response, paths.configMaps());
    const list = response.body as KubeList;
    for (const item of list.items ?? []) yield item;
    next = list.metadata?.continue === '' ? undefined : list.metadata?.continue;
  } while (next !== undefined);
}
