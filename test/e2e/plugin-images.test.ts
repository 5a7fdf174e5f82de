// The token-request plugin image (scripts/image.mjs) against the real control plane: the image unpacked into an
// otherwise empty root filesystem at /plugins (no libc, no shell, no Node.js), run there with chroot, bootstrapped from
// tenant-cert (the real issuer, certificates signed by kube-controller-manager); kube-apiserver accepts the token it
// prints as the ServiceAccount. The integration layer runs all three images against the stand-ins
// (test/integration/plugin-images.test.ts).
import { copyFileSync, mkdirSync, renameSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyAsAdmin, e2eContext, tokenKubeconfig, whoami } from '../helpers/controlplane-e2e.js';
import { buildImages, ensureImageTools, mountDir, runInRoot, unpackImage } from '../helpers/plugin-images.js';
import {
  adminKubectl,
  startE2eIssuer,
  tempDir,
  templatedManifest,
  type E2eIssuer,
} from './fixtures/tenant-cert-issuer.js';

const NAMESPACE = 'img-fleet';
const SA = 'img-workload';
const CONSUMER = 'hub-img';

let setup: E2eIssuer;
let root: string;

beforeAll(async () => {
  ensureImageTools();
  const work = await tempDir('plugin-images');
  await buildImages(join(work, 'out'), ['token-request']);
  const rootfs = unpackImage(join(work, 'out', 'oci'), 'token-request', join(work, 'bundle'));
  root = join(work, 'pod');
  mkdirSync(join(root, 'proc'), { recursive: true });
  renameSync(rootfs, join(root, 'plugins'));

  setup = await startE2eIssuer({
    suffix: 'img',
    providerClusterID: 'member-img',
    consumerClusterID: CONSUMER,
    groups: ['fleet-hubs'],
  });
  copyFileSync(setup.keyFile, join(mountDir(root, 'etc/fleet'), 'consumer.key'));
  mountDir(root, 'var/cache/clusterprofile');
  await adminKubectl(['create', 'namespace', NAMESPACE]);
  await applyAsAdmin(
    await templatedManifest('deploy/token-request-rbac.yaml', [
      ['fleet-workload', SA],
      ['fleet', NAMESPACE],
      ['hub-cluster', CONSUMER],
    ]),
  );
}, 300_000);

afterAll(async () => {
  await setup?.issuer.stop();
});

describe('the token-request image in an empty root filesystem (real kube-apiserver)', () => {
  it('bootstrapped from tenant-cert, it prints a token that kube-apiserver authenticates as the ServiceAccount', async () => {
    const { controlPlane } = e2eContext();
    const info = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: controlPlane.server,
          'certificate-authority-data': Buffer.from(await readFile(controlPlane.caFile, 'utf8')).toString('base64'),
          config: { ...setup.config, namespace: NAMESPACE, serviceAccount: SA, expirationSeconds: 600 },
        },
      },
    });
    // No HOME and no user database, as in a distroless pod: KUBECACHEDIR places both caches, --identity-dir the
    // imported Identities the in-process tenant-cert bootstrap looks for (docs/guides/images.md).
    const run = await runInRoot(
      root,
      [
        '/plugins/bin/clusterprofile-token-request-plugin',
        '--bootstrap',
        'tenant-cert',
        '--cluster-id',
        CONSUMER,
        '--key-file',
        '/etc/fleet/consumer.key',
        '--identity-dir',
        '/var/cache/clusterprofile/identities',
      ],
      { KUBERNETES_EXEC_INFO: info, KUBECACHEDIR: '/var/cache/clusterprofile' },
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const token = (JSON.parse(run.stdout) as { status: { token: string } }).status.token;
    const identity = await whoami(await tokenKubeconfig('image-token', token));
    expect(identity.username).toBe(`system:serviceaccount:${NAMESPACE}:${SA}`);
  });
});
