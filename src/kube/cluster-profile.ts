/**
 * The one reader of ClusterProfiles (multicluster.x-k8s.io v1alpha1 and v1alpha2): from a file (YAML or JSON, one
 * profile or a `List` of them, as `kubectl get -o yaml` writes) and from the hub's API server (one by name, or all of
 * a namespace). Every profile is checked against its JSON Schema (schemas/clusterprofile.<version>.schema.json)
 * before it is handed out.
 *
 * Versions on the hub: v1alpha1 is asked first; when the API server answers 404 with a Status that does not name the
 * object — the answer for a version it does not serve — v1alpha2 is asked. A 404 that names the object means the
 * profile does not exist (no second request). No discovery round trip: the common case costs one request.
 *
 * @example
 * ```ts
 * const [profile] = await readClusterProfileFile('spoke-1.yaml');
 * const hub = createKubeTransport(access.endpoint, access.credential);
 * const same = await getClusterProfile({ send: hub.send, server: access.endpoint.server }, 'fleet', 'spoke-1');
 * ```
 */
import { parseDocument, readDocumentText, readProblem } from '../base/document.js';
import { clip, CredentialsError, quote, redactUrl } from '../base/errors.js';
import { validateDocument, type SchemaId } from '../schemas/index.js';
import { statusMessage } from './status.js';
import type { KubeResponse, SendKubeRequest } from './types.js';
import { isRecord } from '../base/record.js';

export type ClusterProfileErrorCode =
  | 'ERR_PROFILE_READ'
  | 'ERR_PROFILE_PARSE'
  | 'ERR_PROFILE_INVALID'
  | 'ERR_PROFILE_NOT_FOUND'
  | 'ERR_HUB_REQUEST';

export const CLUSTERPROFILE_GROUP = 'multicluster.x-k8s.io';
/** In the order they are asked for on the hub. */
export const CLUSTERPROFILE_VERSIONS = ['v1alpha1', 'v1alpha2'] as const;
export const CLUSTERPROFILE_PLURAL = 'clusterprofiles';

const SCHEMAS: Readonly<Record<string, SchemaId>> = {
  [`${CLUSTERPROFILE_GROUP}/v1alpha1`]: 'clusterprofile.v1alpha1',
  [`${CLUSTERPROFILE_GROUP}/v1alpha2`]: 'clusterprofile.v1alpha2',
};

/** A ClusterProfile that passed its schema; the library's `ClusterProfile` type describes the rest of it. */
export interface ClusterProfileObject {
  apiVersion: `${typeof CLUSTERPROFILE_GROUP}/${(typeof CLUSTERPROFILE_VERSIONS)[number]}`;
  kind: 'ClusterProfile';
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** One item of a hub list: the profile, or why it was refused (the other items stay usable). */
export type ListedClusterProfile =
  | { name: string; profile: ClusterProfileObject; error?: undefined }
  | { name: string; profile?: undefined; error: CredentialsError };

/** The hub as this reader needs it: a transport and its server URL (for messages). */
export interface ClusterProfileHub {
  send: SendKubeRequest;
  server: string;
}

/** An extension's payload is judged by the readers of the reserved extensions (src/resolve/cluster-access.ts), not here. */
const EXTENSION_PAYLOAD =
  /\.status\.(?:accessProviders|credentialProviders)\[\d+\]\.cluster\.extensions\[\d+\]\.extension$/;

/**
 * `doc` as a ClusterProfile, or `ERR_PROFILE_INVALID` whose path is the JSON path of the first problem (`$` replaced
 * by `at`, e.g. `$.items[2]`); `label` names the profile's origin in the message.
 */
export function checkClusterProfile(doc: unknown, label: string, at = '$'): ClusterProfileObject {
  const apiVersion = (doc as { apiVersion?: unknown } | null)?.apiVersion;
  const schema = typeof apiVersion === 'string' ? SCHEMAS[apiVersion] : undefined;
  if (schema === undefined) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_PROFILE_INVALID',
      `invalid ClusterProfile${label === '' ? '' : ` ${label}`}: apiVersion must be one of ${Object.keys(SCHEMAS).join(', ')}, got ${apiVersion === undefined ? 'nothing' : quote(apiVersion)}`,
      { path: `${at}.apiVersion` },
    );
  }
  const issues = validateDocument(schema, doc)
    .map((issue) => ({ ...issue, path: at + issue.path.slice(1) }))
    .filter((issue) => !EXTENSION_PAYLOAD.test(issue.path));
  const first = issues[0];
  if (first !== undefined) {
    const shown = issues.slice(0, 5).map((issue) => `${issue.path}: ${issue.message}`);
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_PROFILE_INVALID',
      `ClusterProfile${label === '' ? '' : ` ${label}`} is invalid: ${shown.join('; ')}${issues.length > 5 ? `; and ${issues.length - 5} more` : ''}`,
      { path: first.path },
    );
  }
  return doc as ClusterProfileObject;
}

/** A `List` (kind `List` or `…List`) with `items`: what `kubectl get -o yaml` prints for several objects. */
function listItems(doc: Record<string, unknown>): unknown[] | undefined {
  return typeof doc['kind'] === 'string' && doc['kind'].endsWith('List') && Array.isArray(doc['items'])
    ? doc['items']
    : undefined;
}

/**
 * The ClusterProfiles in a file: one profile, or every item of a `List` (possibly none). Errors: `ERR_PROFILE_READ`
 * (cannot read), `ERR_PROFILE_PARSE` (not YAML/JSON, not an object), `ERR_PROFILE_INVALID` (schema; path
 * `$.items[i]…` for a list item).
 */
export async function readClusterProfileFile(
  file: string,
  deps: { readFile?: (path: string) => Promise<string> } = {},
): Promise<ClusterProfileObject[]> {
  let text: string;
  try {
    text = await (deps.readFile ?? ((path: string) => readDocumentText(path)))(file);
  } catch (cause) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_PROFILE_READ',
      `cannot read ClusterProfile file ${file}: ${readProblem(cause)}`,
      { path: file, cause },
    );
  }
  const doc = parseDocument(text, {
    source: file,
    code: 'ERR_PROFILE_PARSE',
    format: 'yaml',
    message: `cannot parse ClusterProfile file ${file}`,
  });
  if (!isRecord(doc)) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_PROFILE_PARSE',
      `cannot parse ClusterProfile file ${file}: expected a ClusterProfile object or a List of them`,
      {
        path: file,
      },
    );
  }
  const items = listItems(doc);
  if (items === undefined) return [checkClusterProfile(doc, `in ${file}`)];
  return items.map((item, index) => checkClusterProfile(item, `in ${file}`, `$.items[${index}]`));
}

function profilePath(version: string, namespace: string, name?: string): string {
  const base = `/apis/${CLUSTERPROFILE_GROUP}/${version}/namespaces/${encodeURIComponent(namespace)}/${CLUSTERPROFILE_PLURAL}`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}

function urlOf(hub: ClusterProfileHub, path: string): string {
  return `${clip(redactUrl(hub.server.replace(/\/+$/, '')))}${path}`;
}

/** A 404 Status that names an object: that object does not exist (a version that is not served names none). */
function namesObject(response: KubeResponse): boolean {
  const details = (response.body as { details?: { name?: unknown } } | null)?.details;
  return typeof details?.name === 'string' && details.name !== '';
}

/**
 * GETs `path(version)` for each version in turn while the answer is a 404 that names no object; the last answer and
 * the version it is for. Network failures are `ERR_HUB_REQUEST` with `what` in the message.
 */
async function getAnyVersion(
  hub: ClusterProfileHub,
  path: (version: string) => string,
  what: string,
  signal: AbortSignal | undefined,
): Promise<{ response: KubeResponse; url: string }> {
  let last: { response: KubeResponse; url: string } | undefined;
  for (const version of CLUSTERPROFILE_VERSIONS) {
    const url = urlOf(hub, path(version));
    let response: KubeResponse;
    try {
      response = await hub.send({ method: 'GET', path: path(version) }, signal === undefined ? {} : { signal });
    } catch (cause) {
      throw new CredentialsError<ClusterProfileErrorCode>(
        'ERR_HUB_REQUEST',
        `cannot read ${what} from the hub: ${(cause as Error).message}`,
        { path: url, cause },
      );
    }
    last = { response, url };
    if (response.status !== 404 || namesObject(response)) break;
  }
  return last!;
}

/**
 * One ClusterProfile from the hub (v1alpha1, else v1alpha2). Errors: `ERR_PROFILE_NOT_FOUND` (404), `ERR_HUB_REQUEST`
 * (any other status, or the network; path = the URL), `ERR_PROFILE_INVALID`.
 */
export async function getClusterProfile(
  hub: ClusterProfileHub,
  namespace: string,
  name: string,
  options: { signal?: AbortSignal } = {},
): Promise<ClusterProfileObject> {
  const what = `ClusterProfile ${namespace}/${name}`;
  const { response, url } = await getAnyVersion(
    hub,
    (version) => profilePath(version, namespace, name),
    what,
    options.signal,
  );
  const detail = statusMessage(response.body) ?? `HTTP ${response.status}`;
  if (response.status === 404) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_PROFILE_NOT_FOUND',
      `${what} not found on the hub: ${detail}`,
      {
        path: url,
        hint: namesObject(response)
          ? 'check --namespace and --name (kubectl get clusterprofiles -A)'
          : `the hub serves no ClusterProfiles (${CLUSTERPROFILE_GROUP} ${CLUSTERPROFILE_VERSIONS.join(' or ')}): is the CRD installed?`,
      },
    );
  }
  if (response.status !== 200) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_HUB_REQUEST',
      `cannot read ${what} from the hub (HTTP ${response.status}): ${detail}`,
      { path: url },
    );
  }
  return checkClusterProfile(response.body, `${namespace}/${name} from the hub`);
}

/**
 * Every ClusterProfile of a namespace on the hub (v1alpha1, else v1alpha2), in the hub's order. An item that fails
 * its schema is listed with its error, so one bad profile does not hide the others. Errors: `ERR_HUB_REQUEST`.
 */
export async function listClusterProfiles(
  hub: ClusterProfileHub,
  namespace: string,
  options: { signal?: AbortSignal } = {},
): Promise<ListedClusterProfile[]> {
  const what = `the ClusterProfiles of namespace ${namespace}`;
  const { response, url } = await getAnyVersion(
    hub,
    (version) => profilePath(version, namespace),
    what,
    options.signal,
  );
  if (response.status !== 200) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_HUB_REQUEST',
      `cannot list ClusterProfiles in namespace ${namespace}: ${statusMessage(response.body) ?? `HTTP ${response.status}`}`,
      { path: url },
    );
  }
  const body = response.body as { apiVersion?: unknown; items?: unknown } | null;
  if (!Array.isArray(body?.items)) {
    throw new CredentialsError<ClusterProfileErrorCode>(
      'ERR_HUB_REQUEST',
      `the ClusterProfile list of namespace ${namespace} has no items`,
      { path: url },
    );
  }
  return body.items.map((item: unknown, index): ListedClusterProfile => {
    const metadataName = isRecord(item) && isRecord(item['metadata']) ? item['metadata']['name'] : undefined;
    const name = typeof metadataName === 'string' && metadataName !== '' ? metadataName : `items[${index}]`;
    // A list's items may leave apiVersion and kind to the list.
    const doc = isRecord(item) ? { apiVersion: body.apiVersion, kind: 'ClusterProfile', ...item } : item;
    try {
      return { name, profile: checkClusterProfile(doc, `${namespace}/${name} from the hub`) };
    } catch (error) {
      return { name, error: error as CredentialsError };
    }
  });
}
