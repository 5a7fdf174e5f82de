/**
 * Differential fuzz target `kubeconfig`: kubeconfig files (merged KUBECONFIG lists, an explicit file, ~/.kube/config,
 * relative paths, tokenFile, exec users, proxy-url, missing or overridden current-context, duplicate names, YAML
 * anchors and merge keys, wrong types, bad base64), loaded by our loader (src/kube/kubeconfig-loader.ts) and by
 * client-go's clientcmd through the driver test/e2e/kubeconfig-differential (built by
 * test/e2e/controlplane/build.mjs). Both must give the same server, CA, TLS server name, insecure flag, proxy,
 * credential source and namespace, or both fail; we may refuse more only as {@link OUR_REFUSALS} lists
 * (docs/explanation/upstream.md, "Kubeconfig files").
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createInterface } from 'node:readline';
import { stringify } from 'yaml';
import { isCredentialsError } from '../../src/base/errors.js';
import { type KubeAccess, loadKubeAccess } from '../../src/kube/kubeconfig-loader.js';
import type { Random } from './random.js';
import { type FuzzSession, type FuzzTarget, Tally } from './runner.js';

/** One case: the files of a directory (kubeconfigs and what they reference) and how kubectl would be pointed at them. */
export interface KubeconfigCase {
  files: Record<string, string>;
  /** `--kubeconfig`, relative to the directory. */
  explicit?: string;
  /** KUBECONFIG, entries relative to the directory. */
  kubeconfig?: string;
  /** `--context`. */
  context?: string;
}

/** What both sides make of a case. */
type Outcome = { ok: true; view: Record<string, string | boolean> } | { ok: false; reason: string };

/** Kubeconfigs our loader refuses and clientcmd loads: each a row of the differences table in the docs. */
export const OUR_REFUSALS: ReadonlyArray<{ name: string; applies: (reason: string, server: string) => boolean }> = [
  {
    name: 'a user with auth-provider, basic authentication (username/password) or impersonation',
    applies: (reason) => /supported here/.test(reason),
  },
  {
    name: "a YAML mapping with a duplicate key (clientcmd's YAML reader takes the last)",
    applies: (reason) => reason.includes('a duplicate key'),
  },
  {
    name: 'a user whose token, certificate or key file cannot be read, for a plain http:// server (clientcmd reads no user)',
    applies: (reason, server) => /^http:/i.test(server) && reason.startsWith('ERR_KUBECONFIG_READ'),
  },
  {
    name: 'a credential for a plain http:// server (clientcmd drops it; refused here)',
    applies: (reason, server) => /^http:/i.test(server) && reason.includes('plain http:// server'),
  },
  {
    name: 'a context naming a user no file defines (clientcmd goes on without credentials)',
    applies: (reason) => /has no user named/.test(reason),
  },
];

const CA = '-----BEGIN CERTIFICATE-----\nQ0EtY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n';
const CERT = '-----BEGIN CERTIFICATE-----\nY2xpZW50LWNlcnQ=\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nY2xpZW50LWtleQ==\n-----END PRIVATE KEY-----\n';
const b64 = (text: string): string => Buffer.from(text).toString('base64');

/** A cluster and a user both readers should load: what most kubeconfigs hold. */
function soundCluster(random: Random, dir: string): Record<string, unknown> {
  const value: Record<string, unknown> = {
    server: random.pick([
      'https://api.example:6443',
      'https://10.0.0.1',
      'https://[::1]:6443/p',
      'http://127.0.0.1:8080',
    ]),
  };
  const ca = random.int(0, 2);
  if (ca === 1) value['certificate-authority-data'] = b64(CA);
  if (ca === 2) value['certificate-authority'] = random.pick(['ca.crt', dir === '.' ? 'sub/ca.crt' : '../ca.crt']);
  if (random.chance(0.2)) value['tls-server-name'] = 'api.internal';
  if (random.chance(0.1)) value['insecure-skip-tls-verify'] = true;
  if (random.chance(0.2)) value['proxy-url'] = random.pick(['http://proxy:3128', 'socks5://proxy:1080']);
  return value;
}

function soundUser(random: Random): Record<string, unknown> {
  return random.pick<Record<string, unknown>>([
    { token: 't0ken' },
    { tokenFile: 'token' },
    { tokenFile: 'token', token: 'ignored' },
    { 'client-certificate-data': b64(CERT), 'client-key-data': b64(KEY) },
    { 'client-certificate': 'client.crt', 'client-key': 'client.key' },
    { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'kubectl-oidc', args: ['get-token'] } },
    { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: './bin/plugin' } },
    {},
  ]);
}

function cluster(random: Random, dir: string): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  if (!random.chance(0.03)) {
    value['server'] = random.chance(0.05)
      ? random.pick(['', 6443])
      : random.pick(['https://api.example:6443', 'https://10.0.0.1', 'http://127.0.0.1:8080', 'https://[::1]:6443/p']);
  }
  const ca = random.int(0, 5);
  if (ca === 1) value['certificate-authority-data'] = b64(CA);
  if (ca === 2)
    value['certificate-authority'] = random.pick(['ca.crt', `${dir === '.' ? '' : '../'}ca.crt`, 'missing.crt']);
  if (ca === 3) {
    value['certificate-authority-data'] = random.pick([b64(CA), 'not base64!', b64(CA).replace(/=+$/, ''), '']);
    value['certificate-authority'] = 'ca.crt';
  }
  if (random.chance(0.15)) value['tls-server-name'] = random.pick(['api.internal', '']);
  if (random.chance(0.15)) value['insecure-skip-tls-verify'] = random.chance(0.8) ? random.pick([true, false]) : 'true';
  if (random.chance(0.2)) {
    value['proxy-url'] = random.pick([
      'http://proxy:3128',
      'socks5://proxy:1080',
      'https://proxy',
      'http://proxy:3128',
      'ftp://proxy',
    ]);
  }
  return value;
}

function user(random: Random): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  switch (random.int(0, 8)) {
    case 0:
      value['token'] = random.pick(['t0ken', ' spaced ', '']);
      break;
    case 1:
      value['tokenFile'] = random.pick(['token', 'missing-token']);
      if (random.chance(0.3)) value['token'] = 'also-a-token';
      break;
    case 2:
      value['client-certificate-data'] = b64(CERT);
      if (!random.chance(0.1)) value['client-key-data'] = random.pick([b64(KEY), b64(KEY), '!!']);
      break;
    case 3:
      value['client-certificate'] = random.pick(['client.crt', 'missing.crt']);
      value['client-key'] = 'client.key';
      if (random.chance(0.2)) value['token'] = 'and-a-token';
      break;
    case 4:
      value['exec'] = {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: random.pick(['kubectl-oidc', './relative-plugin']),
        args: random.chance(0.5) ? ['get-token', '--x'] : undefined,
        interactiveMode: random.pick(['Never', 'IfAvailable']),
      };
      if (random.chance(0.2)) value['token'] = 'exec-and-token';
      break;
    case 5:
      value['auth-provider'] = { name: 'oidc', config: {} };
      break;
    case 6:
      value['username'] = 'admin';
      value['password'] = 'secret';
      break;
    case 7:
      value['as'] = 'someone';
      value['token'] = 't';
      break;
    default:
      break;
  }
  return value;
}

/** One kubeconfig file's text: generated entries, written as YAML, sometimes with anchors, sometimes broken. */
function kubeconfigText(random: Random, dir: string, names: readonly string[]): string {
  // Most files are sound (both readers load them); the rest draw every field from the odd and the broken too.
  const sound = random.chance(0.6);
  const pickName = (): string => random.pick(names);
  // Names in one list are distinct but now and then (a duplicate fails the file for clientcmd and for us).
  const namer = () => {
    const used = new Set<string>();
    return (): string => {
      const name = random.chance(0.03)
        ? pickName()
        : (names.find((candidate) => !used.has(candidate)) ?? `x${used.size}`);
      used.add(name);
      return name;
    };
  };
  const [clusterName, userName, contextName] = [namer(), namer(), namer()];
  const clusters = Array.from({ length: random.int(random.chance(0.9) ? 1 : 0, 2) }, () => ({
    name: clusterName(),
    cluster: sound ? soundCluster(random, dir) : cluster(random, dir),
  }));
  const users = Array.from({ length: random.int(random.chance(0.7) ? 1 : 0, 2) }, () => ({
    name: userName(),
    user: sound ? soundUser(random) : user(random),
  }));
  const contexts = Array.from({ length: random.int(random.chance(0.8) ? 1 : 0, 2) }, () => ({
    name: contextName(),
    context: {
      cluster: random.chance(0.95) ? (clusters[0]?.name ?? pickName()) : undefined,
      user: random.chance(0.8) ? (users[0]?.name ?? pickName()) : undefined,
      namespace: random.chance(0.4) ? random.pick(['team-a', '']) : undefined,
    },
  }));
  const document: Record<string, unknown> = { apiVersion: 'v1', kind: 'Config', users, contexts };
  if (random.chance(0.85)) document['current-context'] = random.chance(0.95) ? (contexts[0]?.name ?? pickName()) : '';
  if (random.chance(0.05)) delete document[random.pick(['users', 'contexts'])];
  let clustersText = random.chance(0.1) ? '' : stringify({ clusters });
  if (random.chance(0.2) && clusters.length > 0) {
    // An anchor on the first cluster and an alias of it as another cluster, or a merge key (`<<`) over it.
    clustersText = clustersText.replace(/^( {4})cluster:(.*)$/m, '$1cluster: &shared$2');
    clustersText += random.chance(0.5)
      ? `  - name: ${pickName()}\n    cluster: *shared\n`
      : `  - name: ${pickName()}\n    cluster:\n      <<: *shared\n      server: https://merged:6443\n`;
  }
  let text = clustersText + stringify(document);
  if (!sound && random.chance(0.1)) text = text.replace(/:\s/, ': [');
  if (!sound && random.chance(0.05)) text = random.pick(['', '---\n', 'just a string\n', '[]\n']);
  return text;
}

function generate(random: Random): KubeconfigCase {
  const names = random.pick([['a'], ['a'], ['a'], ['a', 'b'], ['a', 'b', 'c']]);
  const files: Record<string, string> = {
    'ca.crt': CA,
    'sub/ca.crt': CA,
    token: random.pick([' file-token\n', 'file-token', '\n']),
    'sub/token': 'sub-token\n',
    'client.crt': CERT,
    'client.key': KEY,
    'sub/client.crt': CERT,
    'sub/client.key': KEY,
  };
  const candidates = ['one.yaml', 'two.yaml', 'sub/three.yaml', 'home/.kube/config'];
  for (const file of candidates) {
    if (random.chance(0.55)) files[file] = kubeconfigText(random, dirname(file), names);
  }
  const out: KubeconfigCase = { files };
  const mode = random.int(0, 9);
  const present = candidates.filter((file) => files[file] !== undefined);
  if (mode <= 1)
    out.explicit = random.chance(0.9) && present.length > 0 ? random.pick(present) : random.pick(candidates);
  else if (mode <= 7) {
    const entries = Array.from({ length: random.int(1, 4) }, () =>
      random.chance(0.8) && present.length > 0
        ? random.pick(present)
        : random.pick([...candidates, '', 'missing.yaml']),
    );
    out.kubeconfig = entries.join(delimiter);
  }
  if (random.chance(0.2)) out.context = random.pick([...names, 'nope']);
  return out;
}

function ourView(access: KubeAccess): Record<string, string | boolean> {
  const { endpoint, credential } = access;
  const exec = access.exec?.config;
  const command =
    exec === undefined
      ? ''
      : `exec:${String(exec['command'])} ${((exec['args'] as string[] | undefined) ?? []).join(' ')}`;
  return {
    server: endpoint.server,
    ca: endpoint.caPem ?? '',
    tlsServerName: endpoint.tlsServerName ?? '',
    insecure: endpoint.insecureSkipTlsVerify === true,
    proxy: endpoint.proxyUrl ?? '',
    credential:
      exec !== undefined
        ? command
        : credential.kind === 'token'
          ? `token:${credential.token}`
          : credential.kind === 'certificate'
            ? `certificate:${credential.certificatePem}|${credential.keyPem}`
            : 'none',
    namespace: access.namespace ?? 'default',
  };
}

interface GoAnswer {
  id: string;
  error?: string;
  server?: string;
  ca?: string;
  tlsServerName?: string;
  insecure?: boolean;
  proxy?: string;
  credential?: string;
  namespace?: string;
}

/** The Go driver, one request at a time over its stdin and stdout. */
function startDriver(binary: string) {
  const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const waiting: Array<(answer: GoAnswer) => void> = [];
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.(JSON.parse(line) as GoAnswer));
  child.on('close', (code) => {
    for (const resolve of waiting.splice(0)) resolve({ id: '', error: `driver exited ${code}: ${stderr}` });
  });
  return {
    ask(request: Record<string, string>): Promise<GoAnswer> {
      return new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin.write(`${JSON.stringify(request)}\n`);
      });
    },
    close(): Promise<void> {
      child.stdin.end();
      return new Promise((resolve) => (child.exitCode === null ? child.on('close', () => resolve()) : resolve()));
    },
  };
}

/** The driver's path, built (or found in the cache) by test/e2e/controlplane/build.mjs. */
async function builtDriver(): Promise<string> {
  // Loaded from its own path: `npm run fuzz` bundles this file elsewhere, and build.mjs finds its modules beside it.
  const build = pathToFileURL(join(import.meta.dirname, '../e2e/controlplane/build.mjs')).href;
  const { ensureControlPlaneBinaries } = (await import(build)) as typeof import('../e2e/controlplane/build.mjs');
  return (await ensureControlPlaneBinaries({ log: (line) => process.stderr.write(`${line}\n`) }))
    .kubeconfigDifferential;
}

export async function kubeconfigTarget(binary?: string): Promise<FuzzTarget<KubeconfigCase>> {
  const driverBinary = binary ?? (await builtDriver());
  return {
    name: 'kubeconfig',
    async open(): Promise<FuzzSession<KubeconfigCase>> {
      const root = await mkdtemp(join(tmpdir(), 'cpc-kubeconfig-fuzz-'));
      const driver = startDriver(driverBinary);
      const tally = new Tally();
      let next = 0;

      const check = async (input: KubeconfigCase): Promise<string | undefined> => {
        const dir = join(root, String(next++));
        for (const [file, text] of Object.entries(input.files)) {
          await mkdir(dirname(join(dir, file)), { recursive: true });
          await writeFile(join(dir, file), text);
        }
        await mkdir(join(dir, 'home'), { recursive: true });
        const env: Record<string, string> = { HOME: join(dir, 'home') };
        if (input.kubeconfig !== undefined) env['KUBECONFIG'] = input.kubeconfig;
        let ours: Outcome;
        try {
          const access = await loadKubeAccess(
            { kubeconfig: input.explicit, context: input.context, allowExec: true },
            { env, cwd: dir },
          );
          ours = { ok: true, view: ourView(access) };
        } catch (error) {
          if (!isCredentialsError(error)) return `our loader threw an uncoded ${String(error)}`;
          ours = { ok: false, reason: `${error.code}: ${error.message}` };
        }
        const answer = await driver.ask({
          id: dir,
          cwd: dir,
          explicit: input.explicit ?? '',
          kubeconfig: input.kubeconfig ?? '',
          home: join(dir, 'home'),
          context: input.context ?? '',
        });
        await rm(dir, { recursive: true, force: true });
        const { id: _id, error, ...view } = answer;
        const go: Outcome =
          error === undefined
            ? {
                ok: true,
                view: {
                  server: view.server ?? '',
                  ca: view.ca ?? '',
                  tlsServerName: view.tlsServerName ?? '',
                  insecure: view.insecure ?? false,
                  proxy: view.proxy ?? '',
                  credential: view.credential ?? 'none',
                  namespace: view.namespace ?? 'default',
                },
              }
            : { ok: false, reason: error };
        if (!ours.ok && !go.ok) return void tally.add('both refuse');
        if (!ours.ok) {
          const reason = ours.reason;
          const listed = OUR_REFUSALS.find((refusal) =>
            refusal.applies(reason, go.ok ? String(go.view['server']) : ''),
          );
          if (listed !== undefined) return void tally.add(`listed: ${listed.name}`);
          return `we refuse (${reason}), clientcmd loads ${JSON.stringify(go)}`;
        }
        if (
          !go.ok &&
          String(ours.view['credential']).startsWith('exec:') &&
          /exec|interactiveMode|apiVersion/.test(go.reason)
        ) {
          // We check an exec user against the exec-config schema when the client runs it (src/kube/kube-client.ts),
          // clientcmd when it loads the file: the same refusal, later (listed).
          return void tally.add('listed: exec user checked when run, not when loaded');
        }
        if (!go.ok) return `we load ${JSON.stringify(ours.view)}, clientcmd refuses (${go.reason})`;
        if (go.view['credential'] === 'token:' && ours.view['credential'] === 'none') {
          // A tokenFile holding only blanks: clientcmd keeps an empty bearer token, we send no token (listed).
          go.view['credential'] = 'none';
          tally.add('listed: an empty token file is no token');
        }
        if (/^http:/i.test(String(go.view['server']))) {
          // clientcmd reads no TLS settings for a plain http:// server; we keep them, unused (listed). A credential
          // for one is refused before this point.
          for (const key of ['ca', 'tlsServerName', 'insecure']) ours.view[key] = go.view[key]!;
          tally.add('listed: plain http:// server (clientcmd drops the TLS settings)');
        }
        for (const key of Object.keys(go.view)) {
          if (go.view[key] !== ours.view[key]) {
            return `${key}: we load ${JSON.stringify(ours.view[key])}, clientcmd ${JSON.stringify(go.view[key])}`;
          }
        }
        return void tally.add('both load, same');
      };

      return {
        generate,
        check,
        *shrink(input) {
          for (const file of Object.keys(input.files)) {
            if (!file.endsWith('yaml') && !file.endsWith('config')) continue;
            const lines = input.files[file]!.split('\n');
            for (let index = 0; index < lines.length; index += 1) {
              const text = [...lines.slice(0, index), ...lines.slice(index + 1)].join('\n');
              yield { ...input, files: { ...input.files, [file]: text } };
            }
            const { [file]: _dropped, ...rest } = input.files;
            yield { ...input, files: rest };
          }
          if (input.context !== undefined) yield { ...input, context: undefined };
        },
        serialize: (input) => ({ bytes: `${JSON.stringify(input, null, 2)}\n`, extension: 'json' }),
        summary: () => tally.toString(),
        async close() {
          await driver.close();
          await rm(root, { recursive: true, force: true });
        },
      };
    },
  };
}
