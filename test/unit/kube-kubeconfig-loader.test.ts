import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadInClusterAccess, loadKubeAccess } from '../../src/kube/kubeconfig-loader.js';
import { rejection } from '../helpers/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'kube-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function failure(text: string): Promise<{ code: string; message: string; hint?: string; cause?: unknown }> {
  const file = join(dir, `config-${Math.random().toString(16).slice(2)}`);
  writeFileSync(file, text, { mode: 0o600 });
  try {
    await loadKubeAccess({ kubeconfig: file }, { env: {}, cwd: dir });
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected an error');
}

describe('loadKubeAccess: a broken kubeconfig', () => {
  it('names the line of a YAML syntax error without echoing the file (it holds tokens and keys)', async () => {
    const secret = 'sha256~Zm9vYmFyU0VDUkVUVE9LRU4';
    const error = await failure(
      `apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: ${secret}: oops\n`,
    );
    expect(error.code).toBe('ERR_KUBECONFIG_INVALID');
    expect(error.message).toMatch(/line 6/);
    expect(error.message).not.toContain(secret);
    expect(String((error.cause as Error | undefined)?.message ?? '')).not.toContain(secret);
  });

  it('does not echo a token from an unterminated flow mapping either', async () => {
    const secret = 'eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln';
    const error = await failure(`{"users": [{"name": "u", "user": {"token": "${secret}"}}], `);
    expect(error.code).toBe('ERR_KUBECONFIG_INVALID');
    expect(error.message).not.toContain(secret);
  });
});

// ------------------------------------------------------------------------------------------------------------------
// Merging KUBECONFIG and the order of the sources, on real files.

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const b64 = (text: string) => Buffer.from(text).toString('base64');
let counter = 0;

/** A fresh directory under `dir`, with `files` (relative name → content; objects are written as YAML). */
function tree(files: Record<string, unknown>): string {
  const root = join(dir, `t${(counter += 1)}`);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), typeof content === 'string' ? content : stringify(content), { mode: 0o600 });
  }
  mkdirSync(root, { recursive: true });
  return root;
}

function config(parts: {
  current?: string;
  clusters?: Record<string, object>;
  users?: Record<string, object>;
  contexts?: Record<string, object>;
}) {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    ...(parts.current === undefined ? {} : { 'current-context': parts.current }),
    clusters: Object.entries(parts.clusters ?? {}).map(([name, cluster]) => ({ name, cluster })),
    users: Object.entries(parts.users ?? {}).map(([name, user]) => ({ name, user })),
    contexts: Object.entries(parts.contexts ?? {}).map(([name, context]) => ({ name, context })),
  };
}

/** A pod's service-account mount with a token and CA. */
function serviceAccount(): string {
  return tree({ token: 'sa-token\n', 'ca.crt': CA, namespace: 'pod-ns\n' });
}

describe('loadKubeAccess: KUBECONFIG is merged as kubectl merges it', () => {
  it('a name is taken whole from the first file that defines it; current-context from the first file that sets it', async () => {
    const root = tree({
      a: config({
        contexts: { hub: { cluster: 'c', user: 'u', namespace: 'from-a' } },
        clusters: { c: { server: 'https://a.example' } },
      }),
      b: config({
        current: 'hub',
        contexts: { hub: { cluster: 'other', user: 'other' } },
        clusters: { c: { server: 'https://b.example', 'certificate-authority-data': b64(CA) } },
        users: { u: { token: 'from-b' } },
      }),
      c: config({ current: 'later', users: { u: { token: 'from-c' } } }),
    });
    const access = await loadKubeAccess({}, { env: { KUBECONFIG: ['a', 'b', 'c'].join(delimiter) }, cwd: root });
    expect(access.endpoint).toEqual({ server: 'https://a.example' }); // a's cluster c, not merged with b's CA
    expect(access.credential).toEqual({ kind: 'token', token: 'from-b' });
    expect(access.namespace).toBe('from-a');
    expect(access.context).toBe('hub');
    expect(access.origin).toBe('KUBECONFIG');
    expect(access.source).toBe(
      `context "hub" of ${[join(root, 'a'), join(root, 'b'), join(root, 'c')].join(delimiter)}`,
    );
  });

  it('relative paths resolve against the file that holds them; KUBECONFIG entries against cwd', async () => {
    const root = tree({
      'one/config': config({ current: 'x', contexts: { x: { cluster: 'c', user: 'u' } } }),
      'two/config': config({
        clusters: { c: { server: 'https://c.example', 'certificate-authority': 'pki/ca.crt' } },
        users: { u: { 'client-certificate': 'pki/u.crt', 'client-key': '../two/pki/u.key' } },
      }),
      'two/pki/ca.crt': CA,
      'two/pki/u.crt': 'CERT',
      'two/pki/u.key': 'KEY',
      'one/pki/ca.crt': 'the wrong CA',
    });
    const access = await loadKubeAccess(
      {},
      { env: { KUBECONFIG: `one/config${delimiter}${join(root, 'two', 'config')}` }, cwd: root },
    );
    expect(access.endpoint.caPem).toBe(CA);
    expect(access.credential).toEqual({ kind: 'certificate', certificatePem: 'CERT', keyPem: 'KEY' });
  });

  it('empty and missing entries are skipped; a list where no file exists is an error naming KUBECONFIG', async () => {
    const root = tree({
      real: config({
        current: 'x',
        contexts: { x: { cluster: 'c' } },
        clusters: { c: { server: 'https://c.example' } },
      }),
    });
    const list = ['', 'missing-1', '', 'real', 'missing-2', ''].join(delimiter);
    const access = await loadKubeAccess({}, { env: { KUBECONFIG: list }, cwd: root });
    expect(access.endpoint.server).toBe('https://c.example');
    expect(access.credential).toEqual({ kind: 'none' });
    expect(access.source).toBe(`context "x" of ${join(root, 'real')}`);

    const error = await rejection(
      loadKubeAccess(
        { flag: '--kubeconfig' },
        { env: { KUBECONFIG: ['missing-1', '', 'missing-2'].join(delimiter) }, cwd: root },
      ),
    );
    expect(error.code).toBe('ERR_KUBECONFIG_READ');
    expect(error.path).toBe('KUBECONFIG');
    expect(error.message).toBe(
      `cannot read kubeconfig ${join(root, 'missing-1')}${delimiter}${join(root, 'missing-2')}: none of the files KUBECONFIG names exists`,
    );
    expect(error.hint).toContain('pass --kubeconfig FILE');
  });

  it('a KUBECONFIG of only separators counts as unset', async () => {
    const home = tree({
      '.kube/config': config({
        current: 'h',
        contexts: { h: { cluster: 'c' } },
        clusters: { c: { server: 'https://home.example' } },
      }),
    });
    const access = await loadKubeAccess({}, { env: { KUBECONFIG: `${delimiter}${delimiter}`, HOME: home }, cwd: dir });
    expect(access.origin).toBe('home');
  });

  it('--context picks a context of any file instead of current-context', async () => {
    const root = tree({
      a: config({
        current: 'one',
        contexts: { one: { cluster: 'c1' } },
        clusters: { c1: { server: 'https://one.example' } },
      }),
      b: config({
        contexts: { two: { cluster: 'c2', user: 'u' } },
        clusters: { c2: { server: 'https://two.example' } },
        users: { u: { tokenFile: 'token' } },
      }),
      token: '  file-token\n',
    });
    const access = await loadKubeAccess({ context: 'two' }, { env: { KUBECONFIG: `a${delimiter}b` }, cwd: root });
    expect(access.endpoint.server).toBe('https://two.example');
    expect(access.credential).toEqual({ kind: 'token', token: 'file-token' });
    const unknown = await rejection(
      loadKubeAccess({ context: 'three' }, { env: { KUBECONFIG: `a${delimiter}b` }, cwd: root }),
    );
    expect(unknown.code).toBe('ERR_KUBECONFIG_INVALID');
    expect(unknown.message).toContain('has no context named "three" (contexts: "one", "two")');
  });

  it('a name defined twice in one file is invalid (kubectl refuses it too)', async () => {
    const root = tree({
      a: {
        'current-context': 'x',
        clusters: [
          { name: 'c', cluster: { server: 'https://1' } },
          { name: 'c', cluster: { server: 'https://2' } },
        ],
      },
    });
    const error = await rejection(loadKubeAccess({ kubeconfig: 'a' }, { env: {}, cwd: root }));
    expect(error.code).toBe('ERR_KUBECONFIG_INVALID');
    expect(error.path).toBe(`${join(root, 'a')}: $.clusters[1].name`);
  });

  it('exec and auth-provider users are refused with the error they always had; tokenFile wins over token', async () => {
    const root = tree({
      exec: config({
        current: 'x',
        contexts: { x: { cluster: 'c', user: 'u' } },
        clusters: { c: { server: 'https://c' } },
        users: { u: { exec: { command: 'x' } } },
      }),
      both: config({
        current: 'x',
        contexts: { x: { cluster: 'c', user: 'u' } },
        clusters: { c: { server: 'https://c' } },
        users: { u: { token: 'inline', tokenFile: 't' } },
      }),
      t: 'from-file',
    });
    const error = await rejection(loadKubeAccess({ kubeconfig: 'exec' }, { env: {}, cwd: root }));
    expect(error.code).toBe('ERR_KUBECONFIG_INVALID');
    expect(error.message).toBe(
      'only static credentials (client certificate, token, tokenFile) are supported here, not exec or auth-provider users',
    );
    expect((await loadKubeAccess({ kubeconfig: 'both' }, { env: {}, cwd: root })).credential).toEqual({
      kind: 'token',
      token: 'from-file',
    });
  });

  it('a file referenced by the kubeconfig that cannot be read names itself and the kubeconfig', async () => {
    const root = tree({
      k: config({
        current: 'x',
        contexts: { x: { cluster: 'c' } },
        clusters: { c: { server: 'https://c', 'certificate-authority': 'nope.crt' } },
      }),
    });
    const error = await rejection(loadKubeAccess({ kubeconfig: 'k' }, { env: {}, cwd: root }));
    expect(error.code).toBe('ERR_KUBECONFIG_READ');
    expect(error.message).toBe(
      `cannot read the certificate authority ${join(root, 'nope.crt')} ($.clusters[0].cluster.certificate-authority in ${join(root, 'k')}): no such file`,
    );
  });
});

describe("loadKubeAccess: kubectl's order (flag > KUBECONFIG > ~/.kube/config > in-cluster)", () => {
  const kubeconfigFor = (server: string) =>
    config({ current: 'x', contexts: { x: { cluster: 'c' } }, clusters: { c: { server } } });
  const pod = { KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };

  it('each source wins over the ones after it', async () => {
    const root = tree({
      flag: kubeconfigFor('https://flag'),
      env: kubeconfigFor('https://env'),
      'home/.kube/config': kubeconfigFor('https://home'),
    });
    const sa = serviceAccount();
    const deps = (env: Record<string, string>) => ({
      env: { HOME: join(root, 'home'), ...env },
      cwd: root,
      serviceAccountDir: sa,
    });

    const all = await loadKubeAccess({ kubeconfig: 'flag' }, deps({ KUBECONFIG: 'env', ...pod }));
    expect([all.origin, all.endpoint.server]).toEqual(['flag', 'https://flag']);
    const noFlag = await loadKubeAccess({ kubeconfig: '' }, deps({ KUBECONFIG: 'env', ...pod }));
    expect([noFlag.origin, noFlag.endpoint.server]).toEqual(['KUBECONFIG', 'https://env']);
    const home = await loadKubeAccess({}, deps(pod));
    expect([home.origin, home.endpoint.server, home.source]).toEqual([
      'home',
      'https://home',
      `context "x" of ${join(root, 'home', '.kube', 'config')}`,
    ]);
    const inPod = await loadKubeAccess(
      {},
      { env: { HOME: join(root, 'nohome'), ...pod }, cwd: root, serviceAccountDir: sa },
    );
    expect(inPod).toEqual({
      endpoint: { server: 'https://10.0.0.1:443', caPem: CA },
      credential: { kind: 'token', token: 'sa-token' },
      namespace: 'pod-ns',
      source: 'in-cluster service account',
      origin: 'in-cluster',
    });
  });

  it('an explicit file that does not exist is an error, not a reason to look further', async () => {
    const root = tree({ env: kubeconfigFor('https://env') });
    const error = await rejection(
      loadKubeAccess({ kubeconfig: 'absent', flag: '--kubeconfig' }, { env: { KUBECONFIG: 'env' }, cwd: root }),
    );
    expect(error.code).toBe('ERR_KUBECONFIG_READ');
    expect(error.message).toBe(`cannot read kubeconfig ${join(root, 'absent')}: no such file`);
  });

  it('in a pod without a mounted token: ~/.kube/config if there is one, else ERR_IN_CLUSTER_UNAVAILABLE naming the token file', async () => {
    const root = tree({ 'home/.kube/config': kubeconfigFor('https://home') });
    const emptyMount = tree({});
    const withHome = await loadKubeAccess(
      {},
      { env: { ...pod, HOME: join(root, 'home') }, cwd: root, serviceAccountDir: emptyMount },
    );
    expect(withHome.origin).toBe('home');
    const error = await rejection(
      loadKubeAccess({}, { env: { ...pod, HOME: join(root, 'nohome') }, cwd: root, serviceAccountDir: emptyMount }),
    );
    expect(error.code).toBe('ERR_IN_CLUSTER_UNAVAILABLE');
    expect(error.path).toBe(join(emptyMount, 'token'));
  });

  it('a --context skips in-cluster (only a kubeconfig has contexts)', async () => {
    const root = tree({ 'home/.kube/config': kubeconfigFor('https://home') });
    const access = await loadKubeAccess(
      { context: 'x' },
      { env: { ...pod, HOME: join(root, 'home') }, cwd: root, serviceAccountDir: serviceAccount() },
    );
    expect(access.origin).toBe('home');
  });

  it('nothing anywhere: ERR_KUBECONFIG_READ saying what was tried, with a hint that is true', async () => {
    const home = tree({});
    const error = await rejection(
      loadKubeAccess({ flag: '--hub-kubeconfig', what: "the hub's kubeconfig" }, { env: { HOME: home }, cwd: home }),
    );
    expect(error.code).toBe('ERR_KUBECONFIG_READ');
    expect(error.message).toBe(
      `cannot find the hub's kubeconfig: no --hub-kubeconfig, KUBECONFIG is not set, ${join(home, '.kube', 'config')} does not exist, not in a pod (KUBERNETES_SERVICE_HOST/PORT are not set)`,
    );
    expect(error.hint).toBe(
      'pass --hub-kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config; in a pod, the service account token must be mounted',
    );
  });
});

describe('loadInClusterAccess', () => {
  it('outside a pod: ERR_IN_CLUSTER_UNAVAILABLE with a hint naming the kubeconfig sources', async () => {
    const error = await rejection(loadInClusterAccess({ env: {}, cwd: dir }));
    expect(error.code).toBe('ERR_IN_CLUSTER_UNAVAILABLE');
    expect(error.hint).toBe(
      'outside a pod, use a kubeconfig (a --kubeconfig flag, KUBECONFIG or ~/.kube/config) instead',
    );
  });

  it('in a pod: an IPv6 service host is bracketed', async () => {
    const access = await loadInClusterAccess({
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      cwd: dir,
      serviceAccountDir: serviceAccount(),
    });
    expect(access.endpoint.server).toBe('https://[fd00::1]:443');
  });
});

// Each found by the kubeconfig fuzz test (test/fuzz/kubeconfig-target.ts), where clientcmd refused and we loaded, or
// loaded something else.
describe('loadKubeAccess: what clientcmd refuses, refused too', () => {
  const config = (cluster: Record<string, unknown>, user: Record<string, unknown> = {}, extra: unknown[] = []) => ({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'c',
    clusters: [{ name: 'k', cluster: { server: 'https://k:6443', ...cluster } }, ...extra],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'c', context: { cluster: 'k', user: 'u' } }],
  });
  const load = (root: string, allowExec = false) =>
    loadKubeAccess({ kubeconfig: join(root, 'config'), allowExec }, { env: {}, cwd: root });

  it('data and file both set, bad base64 or a wrong type in any entry, a proxy that is not http, https or socks5', async () => {
    const refused = async (files: Record<string, unknown>, message: RegExp) =>
      expect(await rejection(load(tree(files)))).toMatchObject({ code: 'ERR_KUBECONFIG_INVALID', message });
    await refused(
      { config: config({ 'certificate-authority-data': b64(CA), 'certificate-authority': 'ca.crt' }), 'ca.crt': CA },
      /certificate-authority-data and certificate-authority are both set/,
    );
    await refused(
      { config: config({}, { 'client-certificate-data': b64(CA), 'client-key-data': b64(CA), 'client-key': 'k' }) },
      /client-key-data and client-key are both set/,
    );
    // In an entry no context uses: clientcmd decodes the whole file.
    const unused = [{ name: 'other', cluster: { server: 'https://o', 'certificate-authority-data': 'not base64!' } }];
    await refused({ config: config({}, {}, unused) }, /certificate-authority-data is not base64/);
    await refused(
      { config: config({ 'insecure-skip-tls-verify': 'true' }) },
      /insecure-skip-tls-verify must be a boolean/,
    );
    await refused({ config: config({ 'proxy-url': 'ftp://proxy' }) }, /proxy-url must be an http, https or socks5 URL/);
  });

  it("an exec command with a directory in it resolves against the kubeconfig's directory, a bare name does not", async () => {
    const exec = (command: string) => ({ exec: { apiVersion: 'client.authentication.k8s.io/v1', command } });
    const root = tree({ 'sub/config': config({}, exec('./bin/plugin')) });
    const access = await loadKubeAccess(
      { kubeconfig: join(root, 'sub/config'), allowExec: true },
      { env: {}, cwd: root },
    );
    expect(access.exec?.config['command']).toBe(join(root, 'sub/bin/plugin'));
    const bare = await load(tree({ config: config({}, exec('kubectl-oidc')) }), true);
    expect(bare.exec?.config['command']).toBe('kubectl-oidc');
  });
});

describe('loadKubeAccess: a plain http:// server', () => {
  const config = (user: Record<string, unknown>) =>
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'plain', cluster: { server: 'http://127.0.0.1:8080' } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'c', context: { cluster: 'plain', user: 'u' } }],
      'current-context': 'c',
    });

  it('refuses a token for it, naming the server field and never the token (kubectl would send none)', async () => {
    const secret = 'sha256~cGxhaW4taHR0cC10b2tlbg';
    const error = await failure(config({ token: secret }));
    expect(error.code).toBe('ERR_KUBECONFIG_INVALID');
    expect(error.message).toMatch(/plain http:\/\/ server/);
    expect((error as { path?: string }).path).toMatch(/clusters\[0\]\.cluster\.server/);
    expect(error.message).not.toContain(secret);
  });

  it('loads it without a credential', async () => {
    const file = join(dir, 'plain-anonymous');
    writeFileSync(file, config({}), { mode: 0o600 });
    const access = await loadKubeAccess({ kubeconfig: file }, { env: {}, cwd: dir });
    expect(access.endpoint.server).toBe('http://127.0.0.1:8080');
    expect(access.credential).toEqual({ kind: 'none' });
  });
});
