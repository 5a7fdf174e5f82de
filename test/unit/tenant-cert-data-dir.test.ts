import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensurePrivateDir } from '../../src/providers/tenant-cert/issuer/files.js';

const root = mkdtempSync(join(tmpdir(), 'issuer-data-dir-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('issuer data dir ownership and mode', () => {
  it('refuses a data dir that group or others can read', async () => {
    const dir = join(root, 'open');
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o750);
    await expect(ensurePrivateDir(dir)).rejects.toMatchObject({ code: 'ERR_ISSUER_DATA_DIR', path: dir });
  });

  // Whoever owns the directory can replace trust records and CA keys; only root can make one owned by someone else.
  it.runIf(process.getuid?.() === 0)('refuses a 0700 data dir owned by another user (it could plant trust records)', async () => {
    const dir = join(root, 'theirs');
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 65534, 65534);
    await expect(ensurePrivateDir(dir)).rejects.toMatchObject({ code: 'ERR_ISSUER_DATA_DIR', path: dir });
  });
});
