/**
 * The harness cleans up after a failed start: when kube-apiserver dies during start-up, the error names it and shows
 * its log, the etcd already started is stopped and the temp directory is gone.
 */
import { execFileSync } from 'node:child_process';
import { chmod, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { startControlPlane } from '../helpers/controlplane.js';
import { e2eContext, tempFile } from '../helpers/controlplane-e2e.js';

const workDirs = async (): Promise<string[]> =>
  (await readdir(tmpdir())).filter((d) => d.startsWith('cpc-e2e-')).sort();
const etcdProcesses = (etcd: string): number =>
  execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.startsWith(etcd)).length;

describe('control plane harness on failure', () => {
  it('reports the component that died with its log, stops what was started and removes the temp dir', async () => {
    const { binaries } = e2eContext();
    const fake = await tempFile(
      'kube-apiserver',
      '#!/bin/sh\necho "fake kube-apiserver: refusing to start" >&2\nexit 3\n',
    );
    await chmod(fake, 0o755);
    const dirsBefore = await workDirs();
    const etcdBefore = etcdProcesses(binaries.etcd);

    await expect(
      startControlPlane({ binaries: { ...binaries, kubeApiserver: fake }, readyTimeoutMs: 30_000 }),
    ).rejects.toThrow(
      /kube-apiserver exited \(code 3\) before ready \/readyz[\s\S]*fake kube-apiserver: refusing to start/,
    );

    expect(await workDirs()).toEqual(dirsBefore);
    expect(etcdProcesses(binaries.etcd)).toBe(etcdBefore);
  });
});
