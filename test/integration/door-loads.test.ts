// A provider's door (src/providers/<type>/index.ts) is imported by the CLI and by other providers; what it loads
// statically is paid by every one of them. The tenant-cert door re-exports only light modules and hands out Identity
// import and the Tenant builder through loaders; the issuer (src/issuer/) the CLI's issuer command loads itself:
// checked on the built binaries with the recorder of the plugin runtime tests (every module URL resolved).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { runNode } from '../helpers/process.js';
import { CLI, issuerConfig, startIssuer, type RunningIssuer } from '../helpers/tenant-cert-plugin-run.js';
import { createTestCa } from '../helpers/tls.js';

const recorder = ['--import', new URL('../fixtures/runtime/record-loads.mjs', import.meta.url).href];
const TOKEN_REQUEST = fileURLToPath(new URL('../../bin/clusterprofile-token-request.mjs', import.meta.url));
/** Code recognised by what only it contains: @peculiar/x509 (the issuer's checks), the issuer, the consumer's handshake. */
const MARKERS = {
  '@peculiar/x509': 'X509CertificateGenerator',
  'the issuer': 'internal error (details in the issuer log)',
  'the handshake': 'the issuer did not answer in time',
};
const CONSUMER = 'hub-cluster';

let root: string;
let issuer: RunningIssuer | undefined;
let api: FakeKubeApi | undefined;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'cpc-door-loads-'));
});
afterAll(async () => {
  await issuer?.stop();
  await api?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Runs `node <script> args` under the recorder: its result, and the bytes and heavy libraries of what it loaded. */
async function recorded(script: string, args: readonly string[], env: Record<string, string> = {}) {
  const record = join(mkdtempSync(join(root, 'loads-')), 'loads.json');
  const result = await runNode(script, args, { env: { ...env, RECORD_LOADS_FILE: record }, nodeArgs: recorder });
  const { urls } = JSON.parse(readFileSync(record, 'utf8')) as { urls: string[] };
  const files = [...new Set(urls.filter((url) => url.startsWith('file:')))].map((url) => fileURLToPath(url));
  const text = files.map((file) => readFileSync(file, 'utf8')).join('\n');
  return {
    result,
    kib: files.reduce((sum, file) => sum + statSync(file).size, 0) / 1024,
    heavy: Object.entries(MARKERS).flatMap(([library, marker]) => (text.includes(marker) ? [library] : [])),
  };
}

it('the markers are real: each is in the built code', () => {
  const dir = fileURLToPath(new URL('../../dist/bin/', import.meta.url));
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => /\.(mjs|cjs)$/.test(name));
  const text = files.map((name) => readFileSync(join(dir, name), 'utf8')).join('\n');
  // @peculiar/x509 is a dependency imported from node_modules, not bundled: its marker is in its own files, and the
  // bundle imports it by name.
  const x509 = join(fileURLToPath(new URL('../../node_modules/@peculiar/x509/', import.meta.url)));
  const x509Text = readdirSync(x509, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(c|m)?js$/.test(name))
    .map((name) => readFileSync(join(x509, name), 'utf8'))
    .join('\n');
  expect(text).toMatch(/from "@peculiar\/x509"|import\("@peculiar\/x509"\)/);
  expect(
    Object.entries(MARKERS).filter(
      ([library, marker]) => !(library === '@peculiar/x509' ? x509Text : text).includes(marker),
    ),
  ).toEqual([]);
});

it("`clusterprofile keygen` loads neither X.509 nor the issuer (they are behind the door's loaders)", async () => {
  const keygen = await recorded(CLI, ['keygen', '--out', join(root, 'consumer.key'), '--algorithm', 'ecdsa-p256']);
  expect(keygen.result.code, keygen.result.stderr).toBe(0);
  expect(keygen.heavy).toEqual([]);
  // The CLI's own bundle (yargs) is most of it; with the whole door it was over 1.5 MiB.
  expect(keygen.kib).toBeLessThan(400);

  // `tenant generate` builds a CSR, by hand: no X.509 library either.
  const generate = await recorded(CLI, [
    'tenant',
    'generate',
    '--key-file',
    join(root, 'consumer.key'),
    '--cluster-id',
    CONSUMER,
    '--provider-cluster-id',
    'member-1',
    '--nonce',
    'n0nce',
  ]);
  expect(generate.result.code, generate.result.stderr).toBe(0);
  expect(generate.heavy).toEqual([]);
  // The recorder does see them where they are used: the issuer's commands.
  // (`issuer list` refuses a data dir that does not exist: an empty one lists nothing.)
  mkdirSync(join(root, 'empty-data'), { mode: 0o700 });
  const list = await recorded(CLI, ['issuer', 'list', '--data-dir', join(root, 'empty-data')]);
  expect(list.result.code, list.result.stderr).toBe(0);
  expect(list.heavy).toEqual(['@peculiar/x509', 'the issuer']);
});

it('token-request with `--bootstrap tenant-cert` loads the handshake only to obtain the certificate, never X.509 or the issuer', async () => {
  const keyFile = join(root, 'consumer.key');
  const dataDir = join(root, 'data');
  issuer = await startIssuer(dataDir, 'member-1');
  const publicKey = await runNode(CLI, ['keygen', '--out', `${keyFile}.2`, '--algorithm', 'ecdsa-p256']);
  expect(publicKey.code, publicKey.stderr).toBe(0);
  writeFileSync(join(root, 'consumer.pub'), publicKey.stdout);
  const trust = await runNode(CLI, [
    'issuer',
    'trust',
    '--data-dir',
    dataDir,
    '--cluster-id',
    CONSUMER,
    '--public-key',
    join(root, 'consumer.pub'),
  ]);
  expect(trust.code, trust.stderr).toBe(0);
  const ca = await createTestCa('member-api');
  api = await startFakeKubeApi({
    ca,
    clientCaPem: readFileSync(join(dataDir, 'client-ca.crt'), 'utf8'),
    minters: { 'fleet/workload': [CONSUMER] },
    serviceAccounts: ['fleet/workload'],
  });
  const config = {
    ...issuerConfig(issuer, readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'), 'member-1'),
    namespace: 'fleet',
    serviceAccount: 'workload',
  };
  const env = {
    KUBECACHEDIR: join(root, 'kubecache'),
    KUBERNETES_EXEC_INFO: JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false, cluster: { server: api.url, 'certificate-authority-data': ca.certBase64, config } },
    }),
  };
  const args = (cacheDir: string) => [
    '--bootstrap',
    'tenant-cert',
    '--cluster-id',
    CONSUMER,
    '--key-file',
    `${keyFile}.2`,
    '--cache-dir',
    join(root, cacheDir),
  ];
  // The first run makes the handshake and caches the certificate under $KUBECACHEDIR.
  const first = await recorded(TOKEN_REQUEST, args('tokens-1'), env);
  expect(first.result.code, first.result.stderr).toBe(0);
  expect(first.heavy).toEqual(['the handshake']);
  // A token cache miss with the certificate cached: TokenRequest with the cached identity, no handshake code.
  const second = await recorded(TOKEN_REQUEST, args('tokens-2'), env);
  expect(second.result.code, second.result.stderr).toBe(0);
  expect(JSON.parse(second.result.stdout).status.token).toBe(api.minted[1]?.token);
  expect(second.heavy).toEqual([]);
});
