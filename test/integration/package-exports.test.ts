/**
 * The package's entry points as a consumer imports them (the built dist/, in a fresh Node process). A resolve hook
 * makes @kubernetes/client-node unloadable: `clusterprofile-credentials/core` must still work without it (callers
 * that do not use client-node), while the root entry needs it for buildConfigFromClusterProfile.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const DIST = join(import.meta.dirname, '../../dist/library');

function importWithoutClientNode(file: string): { status: number | null; stdout: string; stderr: string } {
  const script = `
    import { registerHooks } from 'node:module';
    registerHooks({
      resolve(specifier, context, next) {
        if (specifier === '@kubernetes/client-node') throw new Error('client-node was loaded');
        return next(specifier, context);
      },
    });
    const module = await import(${JSON.stringify(join(DIST, file))});
    console.log(Object.keys(module).sort().join(','));
  `;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
}

test('clusterprofile-credentials/core loads without @kubernetes/client-node and offers resolution and exec', () => {
  const result = importWithoutClientNode('core.js');
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  const names = result.stdout.trim().split(',');
  expect(names).toEqual(
    expect.arrayContaining([
      'loadAccessConfig',
      'resolveClusterAccess',
      'renderKubeconfig',
      'runExecPlugin',
      'ExecAuthenticator',
    ]),
  );
  expect(names).not.toContain('buildConfigFromClusterProfile');
});

test('the root entry adds buildConfigFromClusterProfile, which needs client-node', () => {
  const result = importWithoutClientNode('index.js');
  expect(result.status).not.toBe(0);
  expect(result.stderr).toContain('client-node was loaded');
});
