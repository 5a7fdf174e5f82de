// The plugin images (scripts/image.mjs, docs/guides/images.md) as a controller's pod sees them: each image is built into an
// OCI layout, checked by skopeo and umoci, unpacked by umoci into a root filesystem that holds nothing but the image
// (mounted at /plugins, as an image volume would be) and the files a pod would mount (a Secret, an emptyDir) — no
// libc, no shell, no Node.js, no PATH, no HOME — and run there with chroot, answering a real KUBERNETES_EXEC_INFO
// against the real tenant-cert issuer, the TokenRequest API server and the OpenID Provider of the integration tests.
// Needs root (chroot, unshare, apt-get); umoci, skopeo and the build's gcc/libc6-dev/binutils are installed if missing.
import { X509Certificate } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeKubeApi, type FakeKubeApi } from '../helpers/kube-api.js';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-op.js';
import {
  PLUGIN_TYPES as TYPES,
  buildImages,
  ensureImageTools,
  filesUnder as files,
  hasInterpreter,
  mountDir,
  runInRoot,
  sh,
  unpackImage,
  type ImageReport,
  type PluginType,
} from '../helpers/plugin-images.js';
import {
  CLI,
  execInfo,
  issuerConfig,
  runNode,
  startIssuer,
  V1,
  type RunningIssuer,
} from '../helpers/tenant-cert-plugin-run.js';
import { createTestCa, type TestCa } from '../helpers/tls.js';

let work: string;
let layout: string;
let report: ImageReport;
const rootfs = {} as Record<PluginType, string>;

/** A fresh, otherwise empty root holding the image's rootfs of `type` at /plugins, an empty /proc and the given extra files. */
function podRoot(type: PluginType, name: string): string {
  const root = join(work, `pod-${name}`);
  mkdirSync(join(root, 'proc'), { recursive: true });
  renameSync(rootfs[type], join(root, 'plugins'));
  rootfs[type] = join(root, 'plugins');
  return root;
}

beforeAll(async () => {
  ensureImageTools();
  work = mkdtempSync(join(tmpdir(), 'cpc-images-'));
  report = await buildImages(join(work, 'out'));
  layout = join(work, 'out', 'oci');
  for (const type of TYPES) rootfs[type] = unpackImage(layout, type, join(work, `bundle-${type}`));
}, 300_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('plugin images: the OCI layout', () => {
  it('skopeo reads every image: amd64/linux, two layers of which the runtime layer is one blob shared by the three, the launcher as entrypoint', () => {
    const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    expect(index.manifests.map((m) => m.annotations['org.opencontainers.image.ref.name'])).toEqual([...TYPES]);
    const runtimeLayers = new Set<string>();
    for (const type of TYPES) {
      const inspect = JSON.parse(sh('skopeo', ['inspect', `oci:${layout}:${type}`])) as {
        Digest: string;
        Architecture: string;
        Os: string;
        Layers: string[];
      };
      expect(inspect).toMatchObject({ Architecture: 'amd64', Os: 'linux', Digest: report.images[type].manifest });
      expect(inspect.Layers).toHaveLength(2);
      runtimeLayers.add(inspect.Layers[0]!);
      const config = JSON.parse(sh('skopeo', ['inspect', '--config', `oci:${layout}:${type}`])) as {
        config: { Entrypoint: string[] };
      };
      expect(config.config.Entrypoint).toEqual([`/bin/clusterprofile-${type}-plugin`]);
      expect(sh('umoci', ['stat', '--image', `${layout}:${type}`])).toContain(`clusterprofile-${type}-plugin`);
    }
    expect(runtimeLayers.size).toBe(1);
  });

  it('each image holds only its own files: two static launchers in /bin, no shell, Node.js with its loader and libraries, licences; under 60 MiB compressed', () => {
    for (const type of TYPES) {
      const all = files(rootfs[type]);
      expect(all.filter((f) => f.startsWith('bin/'))).toEqual([
        'bin/clusterprofile-image-install',
        `bin/clusterprofile-${type}-plugin`,
      ]);
      expect(all.filter((f) => /(^|\/)(sh|bash|dash|busybox)$/.test(f))).toEqual([]);
      expect(all.filter((f) => f.startsWith('lib/clusterprofile-runtime/')).sort()).toEqual(
        [
          'ld-linux-x86-64.so.2',
          'libc.so.6',
          'libdl.so.2',
          'libgcc_s.so.1',
          'libm.so.6',
          'libpthread.so.0',
          'libstdc++.so.6',
          'node',
        ].map((f) => `lib/clusterprofile-runtime/${f}`),
      );
      expect(hasInterpreter(join(rootfs[type], `bin/clusterprofile-${type}-plugin`))).toBe(false);
      expect(hasInterpreter(join(rootfs[type], 'bin/clusterprofile-image-install'))).toBe(false);
      expect(hasInterpreter(join(rootfs[type], 'lib/clusterprofile-runtime/node'))).toBe(true); // why the launcher exists
      expect(all).toEqual(
        expect.arrayContaining([
          'share/doc/clusterprofile-runtime/node/LICENSE',
          'share/doc/clusterprofile-runtime/libc6/copyright',
          'share/doc/clusterprofile-runtime/libstdc++6/copyright',
          'share/doc/clusterprofile-runtime/launcher/launcher.c',
          `share/doc/clusterprofile-${type}-plugin/LICENSE`,
        ]),
      );
      expect(
        all.some(
          (f) => f.includes('node_modules/') && !f.startsWith(`share/doc/clusterprofile-${type}-plugin/node_modules/`),
        ),
      ).toBe(false);
      expect(report.images[type].compressedBytes).toBeLessThan(60 * 2 ** 20);
    }
  });
});

describe('plugin images: each plugin answers from an otherwise empty root filesystem', () => {
  let servingCa: string;
  let clientCa: string;
  let issuer: RunningIssuer;
  let ca: TestCa;
  let api: FakeKubeApi;
  let op: TestOpenIdProvider;

  beforeAll(async () => {
    const dataDir = join(work, 'issuer-data');
    [issuer, ca, op] = await Promise.all([startIssuer(dataDir, 'member-1'), createTestCa(), startTestOpenIdProvider()]);
    servingCa = readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8');
    clientCa = readFileSync(join(dataDir, 'client-ca.crt'), 'utf8');
    api = await startFakeKubeApi({
      ca,
      minters: { 'fleet/fleet-workload': ['bootstrap-token'] },
      serviceAccounts: ['fleet/fleet-workload'],
    });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([issuer?.stop(), api?.close(), op?.close()]);
  });

  it('tenant-cert at /plugins: a certificate from the real issuer that a TLS server trusting client-ca.crt accepts; the second run is a cache hit', async () => {
    const root = podRoot('tenant-cert', 'tenant-cert');
    const secrets = mountDir(root, 'etc/fleet');
    mountDir(root, 'var/cache/clusterprofile');
    const key = join(secrets, 'consumer.key');
    const keygen = await runNode(CLI, ['keygen', '--out', key]);
    expect(keygen.code, keygen.stderr).toBe(0);
    writeFileSync(`${key}.pub`, keygen.stdout);
    const trust = await runNode(CLI, [
      'issuer',
      'trust',
      '--data-dir',
      issuer.dataDir,
      '--cluster-id',
      'consumer-1',
      '--public-key',
      `${key}.pub`,
    ]);
    expect(trust.code, trust.stderr).toBe(0);

    const argv = [
      '/plugins/bin/clusterprofile-tenant-cert-plugin',
      '--cluster-id',
      'consumer-1',
      '--key-file',
      '/etc/fleet/consumer.key',
      '--identity-dir',
      '/var/cache/clusterprofile/identities',
    ];
    const env = {
      KUBERNETES_EXEC_INFO: execInfo(V1, issuerConfig(issuer, servingCa, 'member-1')),
      KUBECACHEDIR: '/var/cache/clusterprofile',
    };
    const first = await runInRoot(root, argv, env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const credential = JSON.parse(first.stdout) as {
      apiVersion: string;
      kind: string;
      status: { clientCertificateData: string; clientKeyData: string; expirationTimestamp: string };
    };
    expect(credential).toMatchObject({ apiVersion: V1, kind: 'ExecCredential' });
    expect(
      new X509Certificate(credential.status.clientCertificateData).checkIssued(new X509Certificate(clientCa)),
    ).toBe(true);
    expect(credential.status.clientKeyData).toBe(readFileSync(key, 'utf8'));
    expect(
      readdirSync(join(root, 'var/cache/clusterprofile/clusterprofile/tenant-cert')).filter((f) => f.endsWith('.json')),
    ).toHaveLength(1);

    const member = await createTestCa('member-api-ca');
    const serving = await member.issueServerCert();
    const server = https.createServer(
      { cert: serving.cert, key: serving.key, ca: clientCa, requestCert: true, rejectUnauthorized: true },
      (req, res) => {
        res.end(String((req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject.CN));
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        https
          .get(
            `https://127.0.0.1:${(server.address() as AddressInfo).port}/`,
            {
              ca: member.cert,
              cert: credential.status.clientCertificateData,
              key: credential.status.clientKeyData,
              agent: false,
            },
            (res) => {
              let body = '';
              res
                .setEncoding('utf8')
                .on('data', (chunk: string) => (body += chunk))
                .on('end', () => resolve(body));
            },
          )
          .on('error', reject);
      });
      expect(answer).toBe('consumer-1');
    } finally {
      server.closeAllConnections();
      server.close();
    }

    const second = await runInRoot(root, argv, env);
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout).status.clientCertificateData).toBe(credential.status.clientCertificateData);
  });

  it("token-request at /plugins: a bound token minted by the API server (reached by a name from the pod's /etc/hosts), which it then accepts", async () => {
    const root = podRoot('token-request', 'token-request');
    const secrets = mountDir(root, 'etc/fleet');
    mountDir(root, 'var/cache/clusterprofile');
    // The kubelet mounts /etc/hosts into every container; the image's glibc resolves the name (no NSS modules to load).
    writeFileSync(join(root, 'etc/hosts'), '127.0.0.1 localhost\n');
    const server = api.url.replace('127.0.0.1', 'localhost');
    writeFileSync(
      join(secrets, 'bootstrap.kubeconfig'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'c',
        clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': ca.certBase64 } }],
        users: [{ name: 'u', user: { token: 'bootstrap-token' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      }),
      { mode: 0o600 },
    );
    const info = JSON.stringify({
      apiVersion: V1,
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server,
          'certificate-authority-data': ca.certBase64,
          config: {
            namespace: 'fleet',
            serviceAccount: 'fleet-workload',
            audiences: ['https://member.example'],
            expirationSeconds: 3600,
          },
        },
      },
    });
    const run = await runInRoot(
      root,
      [
        '/plugins/bin/clusterprofile-token-request-plugin',
        '--bootstrap-kubeconfig',
        '/etc/fleet/bootstrap.kubeconfig',
        '--cache-dir',
        '/var/cache/clusterprofile/token-request',
      ],
      { KUBERNETES_EXEC_INFO: info },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const token = (JSON.parse(run.stdout) as { status: { token: string } }).status.token;
    expect(api.minted.map((m) => m.token)).toEqual([token]);
    const { Agent, request } = await import('undici');
    const response = await request(`${api.url}/api/v1/namespaces/fleet/pods`, {
      headers: { authorization: `Bearer ${token}` },
      dispatcher: new Agent({ connect: { ca: ca.cert } }),
    });
    await response.body.dump();
    expect(response.statusCode).toBe(200);
  });

  /** An oidc client_credentials run in `root` (plugin under `mount`), verified against the OP's keys. */
  async function oidcRun(root: string, mount: string, proc = true): Promise<void> {
    const secrets = mountDir(root, 'etc/fleet');
    mountDir(root, 'var/cache/clusterprofile');
    writeFileSync(join(secrets, 'client.secret'), op.clients.basic.clientSecret, { mode: 0o600 });
    const info = JSON.stringify({
      apiVersion: V1,
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://member.example:6443',
          config: {
            issuerURL: op.issuer,
            issuerCA: op.caBase64,
            audience: op.audience,
            clientID: op.clients.basic.clientId,
          },
        },
      },
    });
    const run = await runInRoot(
      root,
      [`${mount}/bin/clusterprofile-oidc-plugin`, '--client-secret-file', '/etc/fleet/client.secret'],
      { KUBERNETES_EXEC_INFO: info, KUBECACHEDIR: '/var/cache/clusterprofile' },
      proc,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const token = (JSON.parse(run.stdout) as { status: { token: string } }).status.token;
    const { keys } = (await (await fetch(`${op.issuer}/jwks`, { dispatcher: op.dispatcher })).json()) as {
      keys: object[];
    };
    const { payload } = await jwtVerify(token, createLocalJWKSet({ keys: keys as never }), {
      issuer: op.issuer,
      audience: op.audience,
    });
    expect(payload.sub).toBe(op.clients.basic.clientId);
  }

  it('oidc at /plugins: an access token from the real OpenID Provider, verified with its keys', async () => {
    await oidcRun(podRoot('oidc', 'oidc'), '/plugins');
  });

  it('the initContainer variant: clusterprofile-image-install run with the image as the container root fills an emptyDir; the copy, mounted elsewhere, answers', async () => {
    // The image as a container's root filesystem, with the emptyDir mounted at /shared.
    const container = rootfs.oidc;
    mkdirSync(join(container, 'proc'));
    mkdirSync(join(container, 'shared'));
    const install = await runInRoot(container, ['/bin/clusterprofile-image-install', '/shared']);
    expect(install.stderr).toBe('');
    expect(install.code).toBe(0);
    const copy = join(work, 'pod-copy');
    mkdirSync(join(copy, 'proc'), { recursive: true });
    mkdirSync(join(copy, 'opt'));
    renameSync(join(container, 'shared'), join(copy, 'opt', 'cpc'));
    expect(files(join(copy, 'opt', 'cpc'))).toEqual(files(container).filter((f) => !f.startsWith('shared/')));
    // No /proc either: the launcher finds itself through argv[0].
    await oidcRun(copy, '/opt/cpc', false);

    const usage = await runInRoot(container, ['/bin/clusterprofile-image-install']);
    expect(usage).toMatchObject({ code: 2, stdout: '' });
    expect(usage.stderr).toContain('clusterprofile-image-install: ERR_PLUGIN_USAGE: expected one argument');
  });
});

describe('plugin images: bad input from inside the root filesystem', () => {
  let root: string;
  beforeAll(() => {
    root = podRoot('tenant-cert', 'bad');
  });
  const plugin = '/plugins/bin/clusterprofile-tenant-cert-plugin';
  const flags = ['--cluster-id', 'c1', '--key-file', '/etc/fleet/none.key', '--cache-dir', '/nowhere'];

  it('KUBERNETES_EXEC_INFO that is not JSON: ERR_PLUGIN_EXEC_INFO on stderr, nothing on stdout, exit 2', async () => {
    const run = await runInRoot(root, [plugin, ...flags], { KUBERNETES_EXEC_INFO: '{not json' });
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toMatch(/^clusterprofile-tenant-cert: ERR_PLUGIN_EXEC_INFO: /);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it('no HOME, no KUBECACHEDIR, no --cache-dir (a pod without a user database): ERR_PLUGIN_CACHE_IO naming --cache-dir, exit 1', async () => {
    const run = await runInRoot(root, [plugin, '--cluster-id', 'c1', '--key-file', '/k', '--identity-dir', '/i'], {
      KUBERNETES_EXEC_INFO: execInfo(V1, issuerConfig({ url: 'https://127.0.0.1:1' }, 'x', 'p')),
    });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toContain('clusterprofile-tenant-cert: ERR_PLUGIN_CACHE_IO: no cache directory');
    expect(run.stderr).toContain('hint: give --cache-dir DIR or set KUBECACHEDIR');
  });

  it('an unknown flag: ERR_PLUGIN_USAGE, exit 2 — the launcher passes arguments and the exit status through', async () => {
    const run = await runInRoot(root, [plugin, '--no-such-flag'], {});
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toContain("ERR_PLUGIN_USAGE: Unknown option '--no-such-flag'");
  });

  it('a launcher without its plugin (an incomplete copy): one line naming the missing file, exit 1', async () => {
    const broken = join(work, 'pod-broken');
    mkdirSync(join(broken, 'x', 'bin'), { recursive: true });
    copyFileSync(
      join(root, 'plugins/bin/clusterprofile-tenant-cert-plugin'),
      join(broken, 'x/bin/clusterprofile-foo-plugin'),
    );
    chmodSync(join(broken, 'x/bin/clusterprofile-foo-plugin'), 0o755);
    const run = await runInRoot(broken, ['/x/bin/clusterprofile-foo-plugin'], {}, false);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toBe(
      'clusterprofile-foo-plugin: the plugin image is incomplete or unreadable: cannot read /x/lib/clusterprofile-foo-plugin/main.mjs: No such file or directory\n',
    );
  });
});
