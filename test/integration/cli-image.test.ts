// The CLI image (scripts/image.mjs, ref `cli`; docs/guides/images.md) as the issuer's Deployment (deploy/base) runs it: built
// into one OCI layout with a plugin image, checked with skopeo, unpacked with umoci into a root filesystem that holds
// nothing but the image, the Secret the Deployment mounts and a /tmp, and run there with chroot as the Deployment's
// user, with the image's environment only (PATH=/bin, no HOME) and the Deployment's command.
// Needs root (chroot, unshare, apt-get); umoci, skopeo and the build's gcc/libc6-dev/binutils are installed if missing.
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  buildImages,
  ensureImageTools,
  filesUnder,
  hasInterpreter,
  sh,
  unpackImage,
} from '../helpers/plugin-images.js';
import { ROOT } from '../helpers/issuer-process.js';
import { createTestCa } from '../helpers/tls.js';
import { runCommand } from '../helpers/process.js';

let work: string;
let layout: string;
let rootfs: string;

interface Container {
  command: string[];
  args: string[];
  volumeMounts: { name: string; mountPath: string }[];
}
const deployment = parse(readFileSync(join(ROOT, 'deploy/base/deployment.yaml'), 'utf8')) as {
  spec: {
    template: {
      spec: { securityContext: { runAsUser: number; runAsGroup: number; fsGroup: number }; containers: Container[] };
    };
  };
};
const pod = deployment.spec.template.spec;
const container = pod.containers[0]!;

beforeAll(async () => {
  ensureImageTools();
  work = mkdtempSync(join(tmpdir(), 'cpc-cli-image-'));
  await buildImages(join(work, 'out'), ['tenant-cert', 'cli']);
  layout = join(work, 'out', 'oci');
  rootfs = unpackImage(layout, 'cli', join(work, 'bundle-cli'));
}, 300_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

function imageConfig(ref: string): { Entrypoint: string[]; Env?: string[]; User?: string } {
  return (
    JSON.parse(sh('skopeo', ['inspect', '--config', `oci:${layout}:${ref}`])) as {
      config: { Entrypoint: string[]; Env?: string[] };
    }
  ).config;
}

describe('the CLI image', () => {
  it("entrypoint /bin/clusterprofile (static launcher), PATH=/bin, the runtime layer one blob with the plugin image's; the Deployment's command resolves to it", () => {
    const cli = JSON.parse(sh('skopeo', ['inspect', `oci:${layout}:cli`])) as {
      Layers: string[];
      Architecture: string;
      Os: string;
    };
    const plugin = JSON.parse(sh('skopeo', ['inspect', `oci:${layout}:tenant-cert`])) as { Layers: string[] };
    expect(cli).toMatchObject({ Architecture: 'amd64', Os: 'linux' });
    expect(cli.Layers).toHaveLength(2);
    expect(cli.Layers[0]).toBe(plugin.Layers[0]);
    expect(cli.Layers[1]).not.toBe(plugin.Layers[1]);
    const config = imageConfig('cli');
    expect(config.Entrypoint).toEqual(['/bin/clusterprofile']);
    expect(config.Env).toEqual(['PATH=/bin']);
    expect(config.User).toBeUndefined(); // the pod spec sets it
    expect(sh('umoci', ['stat', '--image', `${layout}:cli`])).toContain('clusterprofile');

    const all = filesUnder(rootfs);
    expect(all.filter((f) => f.startsWith('bin/'))).toEqual(['bin/clusterprofile', 'bin/clusterprofile-image-install']);
    expect(all).toContain('lib/clusterprofile/main.mjs');
    expect(all).toContain('share/doc/clusterprofile/LICENSE');
    expect(
      all.some((f) => f.includes('node_modules/') && !f.startsWith('share/doc/clusterprofile/node_modules/')),
    ).toBe(false);
    expect(hasInterpreter(join(rootfs, 'bin/clusterprofile'))).toBe(false);
    // The bundled packages (yargs, client-node, prom-client...) are listed with a licence file each.
    const bundled = JSON.parse(readFileSync(join(rootfs, 'share/doc/clusterprofile/bundled.json'), 'utf8')) as {
      name: string;
    }[];
    expect(bundled.map((p) => p.name)).toEqual(
      expect.arrayContaining(['yargs', 'prom-client', '@kubernetes/client-node']),
    );

    // `command: [clusterprofile]` (no path) is looked up on the image's PATH; the args start with `issuer serve`.
    expect(container.command).toEqual(['clusterprofile']);
    expect(container.args.slice(0, 2)).toEqual(['issuer', 'serve']);
    const path = config
      .Env!.find((e) => e.startsWith('PATH='))!
      .slice('PATH='.length)
      .split(':');
    expect(path.some((dir) => all.includes(`${dir.replace(/^\//, '')}/${container.command[0]}`))).toBe(true);
  });

  it('as the Deployment runs it (its user, its command, a read-only root with /tmp, the serving Secret 0440 root:fsGroup, no HOME): --help, then issuer serve answers /healthz over the mounted certificate and stops on SIGTERM', async () => {
    const env = Object.fromEntries(
      imageConfig('cli').Env!.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
    );
    const user = `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`;
    mkdirSync(join(rootfs, 'proc'));
    mkdirSync(join(rootfs, 'tmp'));
    chmodSync(join(rootfs, 'tmp'), 0o1777);

    const run = (argv: readonly string[]) =>
      runCommand(
        '/usr/bin/unshare',
        [
          '--mount',
          '--pid',
          '--fork',
          `--mount-proc=${join(rootfs, 'proc')}`,
          '/usr/sbin/chroot',
          '--userspec',
          user,
          rootfs,
          ...argv,
        ],
        { env },
      );
    const usage = await run([...container.command, 'issuer', 'serve', '--help']);
    expect(usage.stderr).toBe('');
    expect(usage.code).toBe(0);
    expect(usage.stdout).toContain('--tls-cert-file');

    // The serving Secret where the Deployment mounts it, as the kubelet writes it with defaultMode 0440 and fsGroup.
    const mount = container.volumeMounts.find((m) => m.name === 'serving-tls')!.mountPath;
    const ca = await createTestCa('cli-image-serving-ca');
    const pair = await ca.issueServerCert();
    const tls = join(rootfs, mount);
    mkdirSync(tls, { recursive: true });
    for (const [name, text] of [
      ['tls.crt', pair.cert],
      ['tls.key', pair.key],
    ] as const) {
      writeFileSync(join(tls, name), text);
      chownSync(join(tls, name), 0, pod.securityContext.fsGroup);
      chmodSync(join(tls, name), 0o440);
    }
    const flags = [
      '--data-dir',
      '/tmp/data',
      '--cluster-id',
      'p1',
      '--listen',
      '127.0.0.1:0',
      '--tls-cert-file',
      `${mount}/tls.crt`,
      '--tls-key-file',
      `${mount}/tls.key`,
      '--log-format',
      'json',
    ];
    // readOnlyRootFilesystem: the root read-only, a tmpfs on /tmp (the Deployment's emptyDir), in the pod's mount namespace.
    const podMounts =
      'set -e; r="$1"; shift; mount --rbind "$r" "$r"; mount -o remount,bind,ro "$r"; mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"; exec /usr/sbin/chroot "$@"';
    const child = spawn(
      '/usr/bin/unshare',
      [
        '--mount',
        '--pid',
        '--fork',
        `--mount-proc=${join(rootfs, 'proc')}`,
        '/bin/sh',
        '-c',
        podMounts,
        'sh',
        rootfs,
        `--userspec=${user}`,
        `--groups=${pod.securityContext.fsGroup}`,
        rootfs,
        ...container.command,
        ...container.args.slice(0, 2),
        ...flags,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    try {
      await expect.poll(() => stdout, { timeout: 30_000, interval: 100 }).toMatch(/^https:\/\/127\.0\.0\.1:\d+\n$/);
      const url = stdout.trim();
      const health = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        request(`${url}/healthz`, { ca: ca.cert, agent: new Agent({ keepAlive: false }) }, (response) => {
          let body = '';
          response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        })
          .on('error', reject)
          .end();
      });
      expect(health).toEqual({ status: 200, body: '{"status":"ok"}' });
      // The issuer is pid 1 of its pid namespace (sh execs chroot, which execs it), as in a container: it handles SIGTERM itself.
      const inner = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
      expect(inner).toMatch(/^\d+$/);
      process.kill(Number(inner), 'SIGTERM');
      expect(await exited).toBe(0);
      const lines = stderr
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string });
      expect(lines.some((line) => line.msg.startsWith('serving certificate: serial '))).toBe(true);
      expect(lines.at(-1)?.msg).toContain('stopped:');
    } finally {
      child.kill('SIGKILL');
    }
  });
});
