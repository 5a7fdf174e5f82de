/**
 * The credential plugin policy with real plugin processes: a denied plugin never starts (its marker file stays
 * absent) and the error reaches every caller of the cache; an allowed one runs; under an allowlist the file that
 * was checked is the file that runs, whatever PATH the exec config's own env sets.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExecCredentialCache } from '../../src/exec/authenticator.js';
import { runExecPlugin } from '../../src/exec/runner.js';
import type { ExecConfig } from '../../src/resolve/types.js';

const V1 = 'client.authentication.k8s.io/v1' as const;
let root: string;
let good: string;
let evil: string;

/** A plugin that records that it ran (and which copy) and prints a token. */
function writePlugin(dir: string, label: string): void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'fleet-plugin');
  writeFileSync(
    file,
    `#!/bin/sh\necho ${label} >> ${join(root, 'ran')}\necho '{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"${label}"}}'\n`,
  );
  chmodSync(file, 0o755);
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'cpc-policy-it-'));
  good = join(root, 'good');
  evil = join(root, 'evil');
  writePlugin(good, 'good');
  writePlugin(evil, 'evil');
});

const ran = (): string[] =>
  existsSync(join(root, 'ran')) ? readFileSync(join(root, 'ran'), 'utf8').trim().split('\n') : [];
const exec = (extra: Partial<ExecConfig> = {}): ExecConfig => ({
  apiVersion: V1,
  command: 'fleet-plugin',
  interactiveMode: 'Never',
  ...extra,
});
const parentEnv = () => ({ PATH: `${good}:/usr/bin:/bin` });

describe('credential plugin policy with real plugins', () => {
  it('DenyAll: the plugin never starts, every waiting caller gets ERR_EXEC_PLUGIN_DENIED', async () => {
    const before = ran().length;
    const cache = new ExecCredentialCache({ env: parentEnv(), pluginPolicy: { policyType: 'DenyAll' } });
    const authenticator = cache.authenticatorFor(exec(), undefined);
    const results = await Promise.allSettled([authenticator.getCredential(), authenticator.getCredential()]);
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toMatchObject({
        code: 'ERR_EXEC_PLUGIN_DENIED',
        message: 'plugin "fleet-plugin" not allowed: policy set to "DenyAll"',
      });
    }
    expect(ran().length).toBe(before);
  });

  it('Allowlist: an allowed plugin runs; another is refused before it starts', async () => {
    const policy = { policyType: 'Allowlist' as const, allowlist: [{ name: 'fleet-plugin' }] };
    const credential = await runExecPlugin(exec(), undefined, { env: parentEnv(), pluginPolicy: policy });
    expect(credential.token).toBe('good');
    const before = ran().length;
    await expect(
      runExecPlugin(exec({ command: join(evil, 'fleet-plugin') }), undefined, {
        env: parentEnv(),
        pluginPolicy: policy,
      }),
    ).rejects.toMatchObject({
      code: 'ERR_EXEC_PLUGIN_DENIED',
      message: `plugin path ${JSON.stringify(join(evil, 'fleet-plugin'))} is not permitted by the credential plugin allowlist`,
    });
    expect(ran().length).toBe(before);
  });

  it('Allowlist: the file checked is the file run, even when exec.env sets another PATH', async () => {
    const policy = { policyType: 'Allowlist' as const, allowlist: [{ name: join(good, 'fleet-plugin') }] };
    const credential = await runExecPlugin(
      exec({ env: [{ name: 'PATH', value: `${evil}:/usr/bin:/bin` }] }),
      undefined,
      { env: parentEnv(), pluginPolicy: policy },
    );
    expect(credential.token).toBe('good');
    expect(ran().at(-1)).toBe('good');
  });
});
