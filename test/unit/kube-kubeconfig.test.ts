import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadKubeAccess } from '../../src/kube/kubeconfig.js';

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
    const error = await failure(`apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: ${secret}: oops\n`);
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
