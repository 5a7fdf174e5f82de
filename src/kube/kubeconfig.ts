/**
 * Where an identity for an API server comes from when it is not an exec plugin of ours: a kubeconfig file (the
 * current context, or a named one) or the in-cluster service account. Only static credentials are read (client
 * certificate, token, token file); a kubeconfig user with `exec` or `auth-provider` is refused with a clear error.
 */
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { CredentialsError } from '../core/errors.js';
import type { Env } from '../core/io.js';
import type { KubeCredential, KubeEndpoint } from './types.js';

export interface KubeAccess {
  endpoint: KubeEndpoint;
  credential: KubeCredential;
  /** The context's namespace (kubeconfig) or the pod's namespace (in-cluster), if known. */
  namespace: string | undefined;
  /** Where it came from, for messages. */
  source: string;
}

type Named<T> = { name?: unknown } & T;

function invalid(message: string, path: string): CredentialsError {
  return new CredentialsError('ERR_KUBECONFIG_INVALID', message, { path });
}

function record(value: unknown, what: string, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`${what} must be an object`, path);
  }
  return value as Record<string, unknown>;
}

function findNamed(list: unknown, name: string, key: 'cluster' | 'user' | 'context', file: string): Record<string, unknown> {
  const entries = Array.isArray(list) ? (list as Named<Record<string, unknown>>[]) : [];
  const index = entries.findIndex((entry) => entry?.name === name);
  if (index < 0) {
    throw invalid(`no ${key} named ${JSON.stringify(name)}`, `${file}: $.${key}s`);
  }
  return record(entries[index]![key], `${key} ${JSON.stringify(name)}`, `${file}: $.${key}s[${index}].${key}`);
}

async function readMaybe(path: string, file: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (cause) {
    throw new CredentialsError('ERR_KUBECONFIG_READ', `cannot read ${what} ${path}: ${(cause as Error).message}`, { path: file, cause });
  }
}

function decodeData(value: unknown, path: string): string {
  if (typeof value !== 'string' || value === '') {
    throw invalid('expected base64 data', path);
  }
  return Buffer.from(value, 'base64').toString('utf8');
}

/** Reads `file` and resolves the named context (default: current-context). */
export async function loadKubeconfigAccess(file: string, options: { context?: string } = {}): Promise<KubeAccess> {
  const text = await readMaybe(file, file, 'kubeconfig');
  let doc: unknown;
  try {
    // prettyErrors off: the pretty message quotes the offending line, and a kubeconfig line can be a token or a key.
    doc = parse(text, { prettyErrors: false });
  } catch (cause) {
    const offset = (cause as { pos?: [number, number] }).pos?.[0];
    const where = offset === undefined ? '' : ` at line ${text.slice(0, offset).split('\n').length}`;
    throw new CredentialsError('ERR_KUBECONFIG_INVALID', `kubeconfig ${file} is not YAML: ${(cause as Error).message}${where}`, { path: file, cause });
  }
  const config = record(doc, 'a kubeconfig', `${file}: $`);
  const contextName = options.context ?? config['current-context'];
  if (typeof contextName !== 'string' || contextName === '') {
    throw invalid('no current-context and no context given', `${file}: $.current-context`);
  }
  const context = findNamed(config['contexts'], contextName, 'context', file);
  const cluster = findNamed(config['clusters'], String(context['cluster']), 'cluster', file);
  const user = findNamed(config['users'], String(context['user']), 'user', file);
  const base = dirname(file);
  const resolvePath = (path: string) => (isAbsolute(path) ? path : join(base, path));

  if (typeof cluster['server'] !== 'string') {
    throw invalid('the cluster has no server', `${file}: cluster ${String(context['cluster'])}.server`);
  }
  let caPem: string | undefined;
  if (cluster['certificate-authority-data'] !== undefined) {
    caPem = decodeData(cluster['certificate-authority-data'], `${file}: cluster.certificate-authority-data`);
  } else if (typeof cluster['certificate-authority'] === 'string') {
    caPem = await readMaybe(resolvePath(cluster['certificate-authority']), file, 'certificate authority');
  }
  const endpoint: KubeEndpoint = {
    server: cluster['server'],
    ...(caPem === undefined ? {} : { caPem }),
    ...(typeof cluster['tls-server-name'] === 'string' ? { tlsServerName: cluster['tls-server-name'] } : {}),
    ...(cluster['insecure-skip-tls-verify'] === true ? { insecureSkipTlsVerify: true } : {}),
    ...(typeof cluster['proxy-url'] === 'string' ? { proxyUrl: cluster['proxy-url'] } : {}),
  };

  let credential: KubeCredential;
  if (user['exec'] !== undefined || user['auth-provider'] !== undefined) {
    throw invalid('only static credentials (client certificate, token, tokenFile) are supported here, not exec or auth-provider users', `${file}: user ${String(context['user'])}`);
  } else if (user['client-certificate-data'] !== undefined || user['client-certificate'] !== undefined) {
    const certificatePem = user['client-certificate-data'] !== undefined
      ? decodeData(user['client-certificate-data'], `${file}: user.client-certificate-data`)
      : await readMaybe(resolvePath(String(user['client-certificate'])), file, 'client certificate');
    const keyPem = user['client-key-data'] !== undefined
      ? decodeData(user['client-key-data'], `${file}: user.client-key-data`)
      : typeof user['client-key'] === 'string'
        ? await readMaybe(resolvePath(user['client-key']), file, 'client key')
        : (() => { throw invalid('a client certificate without a client key', `${file}: user ${String(context['user'])}`); })();
    credential = { kind: 'certificate', certificatePem, keyPem };
  } else if (typeof user['token'] === 'string' && user['token'] !== '') {
    credential = { kind: 'token', token: user['token'] };
  } else if (typeof user['tokenFile'] === 'string') {
    credential = { kind: 'token', token: (await readMaybe(resolvePath(user['tokenFile']), file, 'token file')).trim() };
  } else {
    credential = { kind: 'none' };
  }
  const namespace = typeof context['namespace'] === 'string' && context['namespace'] !== '' ? context['namespace'] : undefined;
  return { endpoint, credential, namespace, source: file };
}

/** The files a pod's service account is mounted at (under `root`, for tests). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The in-cluster identity: the pod's service account token, CA and namespace; the API server from the environment. */
export async function loadInClusterAccess(env: Env, options: { root?: string } = {}): Promise<KubeAccess> {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  const dir = join(options.root ?? '/', SERVICE_ACCOUNT_DIR);
  if (host === undefined || host === '' || port === undefined || port === '') {
    throw new CredentialsError('ERR_IN_CLUSTER_UNAVAILABLE', 'not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set', {
      hint: 'give a kubeconfig (KUBECONFIG or a flag) when running outside a pod',
    });
  }
  const read = async (name: string) => {
    try {
      return await readFile(join(dir, name), 'utf8');
    } catch (cause) {
      throw new CredentialsError('ERR_IN_CLUSTER_UNAVAILABLE', `cannot read the in-cluster service account ${name}: ${(cause as Error).message}`, { path: join(dir, name), cause });
    }
  };
  const [token, caPem] = await Promise.all([read('token'), read('ca.crt')]);
  const namespace = await read('namespace').then((value) => value.trim(), () => undefined);
  const server = host.includes(':') ? `https://[${host}]:${port}` : `https://${host}:${port}`;
  return { endpoint: { server, caPem }, credential: { kind: 'token', token: token.trim() }, namespace, source: 'in-cluster service account' };
}
