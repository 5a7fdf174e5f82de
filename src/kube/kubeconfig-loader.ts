/**
 * The one way this package finds an identity for an API server that is not an exec plugin of ours: a kubeconfig or
 * the pod's service account, looked for in one order by every command (`clusterprofile kubeconfig -n/--name`,
 * `clusterprofile token sync`, the token-request plugin's bootstrap and Secret Reader hub, the issuer's CSR signer):
 *
 * 1. an explicit file (`--kubeconfig FILE` and its kin: `--hub-kubeconfig`, `--bootstrap-kubeconfig`): that file
 *    alone, which must exist;
 * 2. `KUBECONFIG`: files separated by `path.delimiter` (`:`, `;` on Windows), merged as kubectl merges them (below);
 * 3. `$HOME/.kube/config` (HOME from the environment passed in), when it exists;
 * 4. in-cluster: `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` set and the service-account token present.
 *
 * This is kubectl's order (client-go's deferred loading falls back to in-cluster only when no kubeconfig file gave it
 * a configuration; client-node's `loadFromDefault` does the same). Before, token sync, the token-request plugin and
 * the CSR signer read only the first file of KUBECONFIG and never ~/.kube/config.
 *
 * Merging (`KUBECONFIG=a:b`), as kubectl does: a cluster, user or context name is taken from the first file that
 * defines it, whole (entries are never merged field by field); `current-context` comes from the first file that sets
 * it; empty and repeated list entries are skipped, and so is a file that does not exist, but a list naming no existing
 * file is `ERR_KUBECONFIG_READ` naming the variable. A name defined twice in one file is `ERR_KUBECONFIG_INVALID`.
 * Relative paths in a file (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`) resolve against
 * the directory of the file that holds them; relative file names in the flag or KUBECONFIG against `cwd`.
 *
 * Only static credentials are read: a client certificate (wins when a token is also set), `tokenFile` (wins over
 * `token`, as in client-go), `token`. Users with `exec` or `auth-provider`, basic auth or impersonation are refused
 * (`ERR_KUBECONFIG_INVALID`): we would otherwise call with another identity than kubectl does.
 *
 * @example
 * ```ts
 * const access = await loadKubeAccess({ kubeconfig: args.kubeconfig, context: args.context, flag: '--kubeconfig' }, { env, cwd });
 * // Callers talk through src/kube/kube-client.ts, which loads it this way (KubeClient.load) and again on rotation.
 * const kube = KubeClient.fromAccess(access, undefined);
 * ```
 */
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path';
import { parseDocument, readDocumentText } from '../base/document.js';
import { CredentialsError, errno } from '../base/errors.js';
import type { Env } from '../base/io.js';
import type { KubeCredential, KubeEndpoint } from './types.js';
import { isGoBase64 } from '../base/go-base64.js';
import { isRecord } from '../base/record.js';

export type KubeconfigErrorCode = 'ERR_KUBECONFIG_READ' | 'ERR_KUBECONFIG_INVALID' | 'ERR_IN_CLUSTER_UNAVAILABLE';

/** Which step of the order gave the identity. */
export type KubeAccessOrigin = 'flag' | 'KUBECONFIG' | 'in-cluster' | 'home';

export interface KubeAccess {
  endpoint: KubeEndpoint;
  credential: KubeCredential;
  /** The context's namespace (kubeconfig) or the pod's namespace (in-cluster), if known. */
  namespace: string | undefined;
  /** Where it came from, for messages: `context "hub" of /a:/b`, or `in-cluster service account`. */
  source: string;
  origin: KubeAccessOrigin;
  /** The context used; undefined in-cluster. */
  context?: string;
  /** The user's `exec` config as written (only with {@link KubeAccessOptions.allowExec}); the credential is then none. */
  exec?: { config: Record<string, unknown>; path: string };
}

/** The side effects the loader uses, passed in. */
export interface KubeAccessDeps {
  /** `KUBECONFIG`, `KUBERNETES_SERVICE_HOST`/`_PORT`, `HOME` (`USERPROFILE` when HOME is unset) are read from here. */
  env: Env;
  /** Relative paths of the flag and of KUBECONFIG entries resolve against this directory. */
  cwd: string;
  /** Reads a UTF-8 file; a missing file must fail with `code: 'ENOENT'`. Default: node:fs. */
  readFile?: (path: string) => Promise<string>;
  /** Where the service account is mounted; default {@link SERVICE_ACCOUNT_DIR}. */
  serviceAccountDir?: string;
}

export interface KubeAccessOptions {
  /** Step 1: this file alone (relative to `cwd`). Undefined or empty: go on with KUBECONFIG. */
  kubeconfig?: string | undefined;
  /** A context to use instead of `current-context` (any kubeconfig step; in-cluster is then skipped). */
  context?: string | undefined;
  /** The flag that gives `kubeconfig`, for messages and hints (e.g. `--hub-kubeconfig`); none: no flag is named. */
  flag?: string;
  /** What the kubeconfig is for, in messages; default `kubeconfig` (e.g. `the hub's kubeconfig`). */
  what?: string;
  /**
   * Accept a user with `exec` (a person's kubeconfig for a managed hub: EKS, GKE, AKS, OIDC login plugins): the
   * access then carries the raw exec config in {@link KubeAccess.exec} and no credential, for a caller above this
   * layer to run it. Default false: an exec user is refused (a plugin of ours must not start other plugins).
   */
  allowExec?: boolean;
}

/** The files a pod's service account is mounted at. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

const IN_CLUSTER_SOURCE = 'in-cluster service account';

type Read = (path: string) => Promise<string>;

const readFromDisk: Read = (path) => readDocumentText(path);

function invalid(message: string, path: string, hint?: string): CredentialsError<KubeconfigErrorCode> {
  return new CredentialsError('ERR_KUBECONFIG_INVALID', message, { path, ...(hint === undefined ? {} : { hint }) });
}

function reasonOf(cause: unknown): string {
  return errno(cause) === 'ENOENT' ? 'no such file' : (cause as Error).message;
}

/** The file's text, or undefined when it does not exist. */
async function readIfExists(read: Read, file: string, what: string): Promise<string | undefined> {
  try {
    return await read(file);
  } catch (cause) {
    if (errno(cause) === 'ENOENT') return undefined;
    throw new CredentialsError('ERR_KUBECONFIG_READ', `cannot read ${what} ${file}: ${reasonOf(cause)}`, {
      path: file,
      cause,
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// One file, and the merge

/** A named cluster, user or context, and the file that defined it (its relative paths resolve against that file). */
interface Entry {
  name: string;
  file: string;
  /** JSON path of the inner object in its file, e.g. `$.users[1].user`. */
  at: string;
  value: Record<string, unknown>;
}

type Kind = 'cluster' | 'user' | 'context';

interface Merged {
  files: string[];
  currentContext: string | undefined;
  entries: Record<Kind, Map<string, Entry>>;
}

function parseKubeconfig(text: string, file: string, what: string): Record<string, unknown> {
  // The one document reader: it never quotes the text (a kubeconfig line can be a token or a key).
  const doc = parseDocument(text, {
    source: file,
    code: 'ERR_KUBECONFIG_INVALID',
    format: 'auto',
    message: `cannot load ${what}: ${file} is not YAML`,
  });
  // An empty file is an empty kubeconfig (kubectl reads it so).
  if (doc === null || doc === undefined) return {};
  if (!isRecord(doc))
    throw invalid(`${what} ${file} must be a mapping (apiVersion, clusters, users, contexts)`, `${file}: $`);
  return doc;
}

/** Fields whose type clientcmd's decoding checks (a string where a bool goes fails the whole file), by type. */
const BOOLEAN_FIELDS = new Set(['insecure-skip-tls-verify', 'disable-compression']);
const STRING_FIELDS = new Set([
  'server',
  'tls-server-name',
  'certificate-authority',
  'proxy-url',
  'client-certificate',
  'client-key',
  'token',
  'tokenFile',
  'as',
  'as-uid',
  'username',
  'password',
  'cluster',
  'user',
  'namespace',
]);

/**
 * clientcmd decodes every entry of every file it loads, used or not: a field of the wrong type or bad base64 in a
 * `*-data` field anywhere fails the load, so it fails ours too (rather than only when that entry is chosen).
 */
function checkFieldTypes(value: Record<string, unknown>, at: string): void {
  for (const [key, field] of Object.entries(value)) {
    if (field === null || field === undefined) continue;
    const wrong =
      (BOOLEAN_FIELDS.has(key) && typeof field !== 'boolean') ||
      ((STRING_FIELDS.has(key) || key.endsWith('-data')) && typeof field !== 'string');
    if (wrong) throw invalid(`${key} must be a ${BOOLEAN_FIELDS.has(key) ? 'boolean' : 'string'}`, `${at}.${key}`);
    if (key.endsWith('-data') && !isGoBase64(field as string)) throw invalid(`${key} is not base64`, `${at}.${key}`);
  }
}

/** Adds one file's entries to `merged`: names already defined by an earlier file are kept (first wins). */
function mergeFile(merged: Merged, doc: Record<string, unknown>, file: string): void {
  merged.files.push(file);
  const current = doc['current-context'];
  if (current !== undefined && current !== null && typeof current !== 'string') {
    throw invalid('current-context must be a string', `${file}: $['current-context']`);
  }
  if (merged.currentContext === undefined && typeof current === 'string' && current !== '') {
    merged.currentContext = current;
  }
  for (const kind of ['cluster', 'user', 'context'] as const) {
    const list = doc[`${kind}s`];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list)) throw invalid(`${kind}s must be a list`, `${file}: $.${kind}s`);
    const seen = new Set<string>();
    list.forEach((item: unknown, index) => {
      const at = `$.${kind}s[${index}]`;
      if (!isRecord(item) || typeof item['name'] !== 'string' || item['name'] === '') {
        throw invalid(`each of ${kind}s needs a name`, `${file}: ${at}.name`);
      }
      const name = item['name'];
      if (seen.has(name))
        throw invalid(`${kind} ${JSON.stringify(name)} is defined twice in one file`, `${file}: ${at}.name`);
      seen.add(name);
      const value = item[kind] ?? {};
      if (!isRecord(value))
        throw invalid(`${kind} ${JSON.stringify(name)} must be a mapping`, `${file}: ${at}.${kind}`);
      checkFieldTypes(value, `${file}: ${at}.${kind}`);
      if (!merged.entries[kind].has(name)) merged.entries[kind].set(name, { name, file, at: `${at}.${kind}`, value });
    });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The chosen context → endpoint and credential

function optionalString(entry: Entry, key: string): string | undefined {
  const value = entry.value[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') throw invalid(`${key} must be a string`, `${entry.file}: ${entry.at}.${key}`);
  return value;
}

function decodeData(entry: Entry, key: string): string | undefined {
  const value = optionalString(entry, key);
  if (value === undefined) return undefined;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  if (decoded.trim() === '') throw invalid('expected base64 data', `${entry.file}: ${entry.at}.${key}`);
  return decoded;
}

/**
 * `<key>-data` or the file `<key>` names, never both: clientcmd refuses an entry that sets both (its data would
 * override the file, and the file would be a lie).
 */
async function dataOrFile(read: Read, entry: Entry, key: string, what: string): Promise<string | undefined> {
  if (optionalString(entry, `${key}-data`) !== undefined && optionalString(entry, key) !== undefined) {
    throw invalid(`${key}-data and ${key} are both set: keep one`, `${entry.file}: ${entry.at}.${key}`);
  }
  return decodeData(entry, `${key}-data`) ?? (await readReferenced(read, entry, key, what));
}

/** `key`'s file, relative to the kubeconfig that holds it, read; undefined when unset. */
async function readReferenced(read: Read, entry: Entry, key: string, what: string): Promise<string | undefined> {
  const value = optionalString(entry, key);
  if (value === undefined) return undefined;
  const path = isAbsolute(value) ? value : join(dirname(entry.file), value);
  try {
    return await read(path);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_KUBECONFIG_READ',
      `cannot read the ${what} ${path} (${entry.at}.${key} in ${entry.file}): ${reasonOf(cause)}`,
      {
        path: entry.file,
        cause,
      },
    );
  }
}

async function endpointOf(read: Read, cluster: Entry): Promise<KubeEndpoint> {
  const server = optionalString(cluster, 'server');
  if (server === undefined)
    throw invalid(`cluster ${JSON.stringify(cluster.name)} has no server`, `${cluster.file}: ${cluster.at}.server`);
  const caPem = await dataOrFile(read, cluster, 'certificate-authority', 'certificate authority');
  const tlsServerName = optionalString(cluster, 'tls-server-name');
  const proxyUrl = optionalString(cluster, 'proxy-url');
  // clientcmd's rule: a proxy is reached over http, https or socks5, nothing else.
  if (proxyUrl !== undefined && !/^(?:https?|socks5):\/\//i.test(proxyUrl)) {
    throw invalid('proxy-url must be an http, https or socks5 URL', `${cluster.file}: ${cluster.at}.proxy-url`);
  }
  return {
    server,
    ...(caPem === undefined ? {} : { caPem }),
    ...(tlsServerName === undefined ? {} : { tlsServerName }),
    ...(cluster.value['insecure-skip-tls-verify'] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(proxyUrl === undefined ? {} : { proxyUrl }),
  };
}

const UNSUPPORTED_USER_KEYS: readonly [string, string][] = [
  [
    'exec',
    'only static credentials (client certificate, token, tokenFile) are supported here, not exec or auth-provider users',
  ],
  [
    'auth-provider',
    'only static credentials (client certificate, token, tokenFile) are supported here, not exec or auth-provider users',
  ],
  ['username', 'basic authentication (username/password) is not supported here: use a client certificate or a token'],
  ['password', 'basic authentication (username/password) is not supported here: use a client certificate or a token'],
  ['as', 'impersonation (as, as-groups, as-uid, as-user-extra) is not supported here'],
  ['as-groups', 'impersonation (as, as-groups, as-uid, as-user-extra) is not supported here'],
  ['as-uid', 'impersonation (as, as-groups, as-uid, as-user-extra) is not supported here'],
  ['as-user-extra', 'impersonation (as, as-groups, as-uid, as-user-extra) is not supported here'],
];

async function credentialOf(read: Read, user: Entry | undefined, allowExec: boolean): Promise<KubeCredential> {
  if (user === undefined) return { kind: 'none' };
  for (const [key, message] of UNSUPPORTED_USER_KEYS) {
    if (key === 'exec' && allowExec) continue;
    const value = user.value[key];
    if (value !== undefined && value !== null && value !== '' && !(Array.isArray(value) && value.length === 0)) {
      throw invalid(message, `${user.file}: ${user.at}.${key} (user ${JSON.stringify(user.name)})`);
    }
  }
  const certificatePem = await dataOrFile(read, user, 'client-certificate', 'client certificate');
  if (certificatePem !== undefined) {
    const keyPem = await dataOrFile(read, user, 'client-key', 'client key');
    if (keyPem === undefined)
      throw invalid(
        'a client certificate without a client key',
        `${user.file}: ${user.at} (user ${JSON.stringify(user.name)})`,
      );
    return { kind: 'certificate', certificatePem, keyPem };
  }
  const fromFile = await readReferenced(read, user, 'tokenFile', 'token file');
  const token = fromFile?.trim() ?? optionalString(user, 'token');
  return token === undefined || token === '' ? { kind: 'none' } : { kind: 'token', token };
}

/**
 * An exec command with a directory in it (`./bin/plugin`), relative, resolves against the kubeconfig's directory, as
 * clientcmd resolves it; a bare name (`kubectl-oidc`) is left for PATH.
 */
function withResolvedCommand(exec: Record<string, unknown>, file: string): Record<string, unknown> {
  const command = exec['command'];
  if (typeof command !== 'string' || isAbsolute(command) || !command.includes('/')) return exec;
  return { ...exec, command: join(dirname(file), command) };
}

async function accessFromKubeconfig(
  read: Read,
  merged: Merged,
  origin: Exclude<KubeAccessOrigin, 'in-cluster'>,
  label: string,
  options: KubeAccessOptions,
): Promise<KubeAccess> {
  const what = options.what ?? 'kubeconfig';
  const name = options.context ?? merged.currentContext;
  const where = merged.files.join(delimiter);
  if (name === undefined || name === '') {
    throw invalid(
      `${what} ${label} has no current-context`,
      `${where}: $['current-context']`,
      'set current-context in the kubeconfig (kubectl config use-context NAME)',
    );
  }
  const context = merged.entries.context.get(name);
  if (context === undefined) {
    const known = [...merged.entries.context.keys()].map((known) => JSON.stringify(known)).join(', ') || 'none';
    throw invalid(
      `${what} ${label} has no context named ${JSON.stringify(name)} (contexts: ${known})`,
      `${where}: $.contexts`,
    );
  }
  const clusterName = optionalString(context, 'cluster');
  const cluster = clusterName === undefined ? undefined : merged.entries.cluster.get(clusterName);
  if (cluster === undefined) {
    throw invalid(
      clusterName === undefined
        ? `context ${JSON.stringify(name)} names no cluster`
        : `${what} ${label} has no cluster named ${JSON.stringify(clusterName)} (context ${JSON.stringify(name)})`,
      `${context.file}: ${context.at}.cluster`,
    );
  }
  const userName = optionalString(context, 'user');
  const user = userName === undefined ? undefined : merged.entries.user.get(userName);
  if (userName !== undefined && user === undefined) {
    throw invalid(
      `${what} ${label} has no user named ${JSON.stringify(userName)} (context ${JSON.stringify(name)})`,
      `${context.file}: ${context.at}.user`,
    );
  }
  const [endpoint, credential] = [
    await endpointOf(read, cluster),
    await credentialOf(read, user, options.allowExec === true),
  ];
  const exec = options.allowExec === true && user !== undefined ? user.value['exec'] : undefined;
  if (exec !== undefined && exec !== null && !isRecord(exec))
    throw invalid('exec must be a mapping', `${user!.file}: ${user!.at}.exec`);
  // kubectl sends no credential to a plain http:// server (clientcmd leaves the user out); we refuse rather than drop
  // it silently, so the operator learns why the requests are anonymous.
  if (/^http:/i.test(endpoint.server) && (credential.kind !== 'none' || isRecord(exec))) {
    throw invalid(
      `cluster ${JSON.stringify(cluster.name)} is a plain http:// server: the credential of user ${JSON.stringify(userName)} would travel in the clear (kubectl sends none to it); use an https:// server`,
      `${cluster.file}: ${cluster.at}.server`,
    );
  }
  return {
    endpoint,
    credential: isRecord(exec) ? { kind: 'none' } : credential,
    ...(isRecord(exec)
      ? { exec: { config: withResolvedCommand(exec, user!.file), path: `${user!.file}: ${user!.at}.exec` } }
      : {}),
    namespace: optionalString(context, 'namespace'),
    source: `context ${JSON.stringify(name)} of ${label}`,
    origin,
    context: name,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// In-cluster

interface InClusterProbe {
  /** The access, when the pod's service account is there. */
  access?: KubeAccess;
  /** Why not, when the environment says we are in a pod but the token is missing. */
  problem?: CredentialsError<KubeconfigErrorCode>;
}

async function probeInCluster(read: Read, deps: KubeAccessDeps): Promise<InClusterProbe> {
  const host = deps.env['KUBERNETES_SERVICE_HOST'];
  const port = deps.env['KUBERNETES_SERVICE_PORT'];
  if (host === undefined || host === '' || port === undefined || port === '') return {};
  const dir = deps.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const file = (name: string) => join(dir, name);
  const unavailable = (name: string, cause: unknown) =>
    new CredentialsError<KubeconfigErrorCode>(
      'ERR_IN_CLUSTER_UNAVAILABLE',
      `cannot read the in-cluster service account ${name} ${file(name)}: ${reasonOf(cause)}`,
      {
        path: file(name),
        cause,
        hint: 'mount the service account token (automountServiceAccountToken), or give a kubeconfig',
      },
    );
  let token: string;
  try {
    token = (await read(file('token'))).trim();
  } catch (cause) {
    // client-go's in-cluster config is "possible" only when the token file is there: otherwise go on.
    if (errno(cause) === 'ENOENT') return { problem: unavailable('token', cause) };
    throw unavailable('token', cause);
  }
  let caPem: string;
  try {
    caPem = await read(file('ca.crt'));
  } catch (cause) {
    throw unavailable('ca.crt', cause);
  }
  const namespace = await read(file('namespace')).then(
    (value) => value.trim() || undefined,
    () => undefined,
  );
  const server = host.includes(':') ? `https://[${host}]:${port}` : `https://${host}:${port}`;
  return {
    access: {
      endpoint: { server, caPem },
      credential: { kind: 'token', token },
      namespace,
      source: IN_CLUSTER_SOURCE,
      origin: 'in-cluster',
    },
  };
}

/**
 * Only the in-cluster identity (step 4; `--bootstrap in-cluster`): the pod's service account token, CA and namespace,
 * the API server from `KUBERNETES_SERVICE_HOST`/`_PORT`.
 */
export async function loadInClusterAccess(deps: KubeAccessDeps): Promise<KubeAccess> {
  const probe = await probeInCluster(deps.readFile ?? readFromDisk, deps);
  if (probe.access !== undefined) return probe.access;
  throw (
    probe.problem ??
    new CredentialsError<KubeconfigErrorCode>(
      'ERR_IN_CLUSTER_UNAVAILABLE',
      'not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set',
      {
        hint: 'outside a pod, use a kubeconfig (a --kubeconfig flag, KUBECONFIG or ~/.kube/config) instead',
      },
    )
  );
}

// ---------------------------------------------------------------------------------------------------------------
// The order

function homeDir(env: Env): string | undefined {
  const home = env['HOME'] !== undefined && env['HOME'] !== '' ? env['HOME'] : env['USERPROFILE'];
  return home === undefined || home === '' ? undefined : home;
}

/**
 * The identity found in kubectl's order (see the module comment): the explicit file, else the `KUBECONFIG` files
 * merged, else `~/.kube/config`, else in-cluster.
 *
 * Errors: `ERR_KUBECONFIG_READ` (a file that cannot be read; the explicit file or every KUBECONFIG file missing;
 * nothing found at all), `ERR_KUBECONFIG_INVALID` (not YAML, wrong shape, unknown context/cluster/user, an
 * unsupported user), `ERR_IN_CLUSTER_UNAVAILABLE` (in a pod whose service account cannot be read, and nothing else).
 * Messages name the file and JSON path, never a token or key.
 */
export async function loadKubeAccess(options: KubeAccessOptions, deps: KubeAccessDeps): Promise<KubeAccess> {
  const read = deps.readFile ?? readFromDisk;
  const what = options.what ?? 'kubeconfig';
  const flagHint = options.flag === undefined ? '' : `pass ${options.flag} FILE, `;
  /** The existing ones of `files`, merged in order. */
  const fromFiles = async (files: readonly string[]): Promise<Merged> => {
    const merged: Merged = {
      files: [],
      currentContext: undefined,
      entries: { cluster: new Map(), user: new Map(), context: new Map() },
    };
    for (const file of files) {
      const text = await readIfExists(read, file, what);
      if (text !== undefined) mergeFile(merged, parseKubeconfig(text, file, what), file);
    }
    return merged;
  };

  // 1. The explicit file.
  if (options.kubeconfig !== undefined && options.kubeconfig !== '') {
    const file = resolve(deps.cwd, options.kubeconfig);
    const merged = await fromFiles([file]);
    if (merged.files.length === 0) {
      throw new CredentialsError<KubeconfigErrorCode>(
        'ERR_KUBECONFIG_READ',
        `cannot read ${what} ${file}: no such file`,
        {
          path: file,
          ...(options.flag === undefined ? {} : { hint: `check ${options.flag}` }),
        },
      );
    }
    return accessFromKubeconfig(read, merged, 'flag', file, options);
  }

  // 2. KUBECONFIG, merged. Empty and repeated entries are skipped, missing files too, unless none exists.
  const listed = [
    ...new Set(
      (deps.env['KUBECONFIG'] ?? '')
        .split(delimiter)
        .filter((entry) => entry !== '')
        .map((entry) => resolve(deps.cwd, entry)),
    ),
  ];
  if (listed.length > 0) {
    const label = listed.join(delimiter);
    const merged = await fromFiles(listed);
    if (merged.files.length === 0) {
      throw new CredentialsError<KubeconfigErrorCode>(
        'ERR_KUBECONFIG_READ',
        `cannot read ${what} ${label}: ${listed.length === 1 ? 'the file KUBECONFIG names does not exist' : 'none of the files KUBECONFIG names exists'}`,
        {
          path: 'KUBECONFIG',
          hint: `${flagHint}point KUBECONFIG at existing files (separated by "${delimiter}"), or unset it to use ~/.kube/config`,
        },
      );
    }
    return accessFromKubeconfig(read, merged, 'KUBECONFIG', merged.files.join(delimiter), options);
  }

  // 3. ~/.kube/config.
  const home = homeDir(deps.env);
  const homeFile = home === undefined ? undefined : join(home, '.kube', 'config');
  if (homeFile !== undefined) {
    const merged = await fromFiles([homeFile]);
    if (merged.files.length > 0) return accessFromKubeconfig(read, merged, 'home', homeFile, options);
  }

  // 4. In-cluster (not when a context is asked for: only a kubeconfig has contexts).
  const probe: InClusterProbe = options.context === undefined ? await probeInCluster(read, deps) : {};
  if (probe.access !== undefined) return probe.access;

  if (probe.problem !== undefined) throw probe.problem;
  const tried = [
    ...(options.flag === undefined ? [] : [`no ${options.flag}`]),
    'KUBECONFIG is not set',
    homeFile === undefined ? 'HOME is not set' : `${homeFile} does not exist`,
    ...(options.context === undefined ? ['not in a pod (KUBERNETES_SERVICE_HOST/PORT are not set)'] : []),
  ];
  throw new CredentialsError<KubeconfigErrorCode>('ERR_KUBECONFIG_READ', `cannot find ${what}: ${tried.join(', ')}`, {
    path: homeFile ?? 'HOME',
    hint: `${flagHint}set KUBECONFIG, or create ~/.kube/config${options.context === undefined ? '; in a pod, the service account token must be mounted' : ''}`,
  });
}
