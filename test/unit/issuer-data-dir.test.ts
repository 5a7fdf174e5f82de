import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensurePrivateDir } from '../../src/issuer/state/data-dir/files.js';

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
  it.runIf(process.getuid?.() === 0)(
    'refuses a 0700 data dir owned by another user (it could plant trust records)',
    async () => {
      const dir = join(root, 'theirs');
      mkdirSync(dir, { mode: 0o700 });
      chownSync(dir, 65534, 65534);
      await expect(ensurePrivateDir(dir)).rejects.toMatchObject({ code: 'ERR_ISSUER_DATA_DIR', path: dir });
    },
  );
});

describe('an issuer starting on a data dir another issuer holds', () => {
  it('is refused before it writes anything (no second CA raced onto the disk under the running issuer)', async () => {
    const { openIssuer } = await import('../../src/issuer/setup.js');
    const { readdirSync, writeFileSync } = await import('node:fs');
    const dataDir = join(root, 'held');
    mkdirSync(dataDir, { mode: 0o700 });
    // Another live process (our parent) holds the lock, as a first `issuer serve` still creating its CAs would.
    writeFileSync(join(dataDir, 'issuer.lock'), `${process.ppid} issuer serve\n`, { mode: 0o600 });
    const settings = {
      dataDir,
      providerClusterID: 'p1',
      certLifetimeMs: 3_600_000,
      nonceTtlMs: 60_000,
      groups: [],
      liqoCompat: false,
      signer: 'embedded' as const,
    };
    await expect(
      openIssuer(settings, { env: {}, now: () => new Date('2026-03-01T12:00:00Z'), cwd: root, holder: 'second' }),
    ).rejects.toMatchObject({
      code: 'ERR_ISSUER_DATA_DIR_LOCKED',
    });
    expect(readdirSync(dataDir)).toEqual(['issuer.lock']);
  });
});

describe('a damaged issuer.json', () => {
  it.each(['{"providerClusterID": "p1"', 'null', '{"providerClusterID": 7}'])(
    '%s is ERR_ISSUER_DATA_DIR naming the file, lock released',
    async (text) => {
      const { openIssuer } = await import('../../src/issuer/setup.js');
      const { existsSync, writeFileSync } = await import('node:fs');
      const dataDir = mkdtempSync(join(root, 'record-'));
      writeFileSync(join(dataDir, 'issuer.json'), text, { mode: 0o600 });
      const settings = {
        dataDir,
        certLifetimeMs: 3_600_000,
        nonceTtlMs: 60_000,
        groups: [],
        liqoCompat: false,
        signer: 'embedded' as const,
      };
      await expect(
        openIssuer(settings, { env: {}, now: () => new Date('2026-03-01T12:00:00Z'), cwd: root, holder: 'test' }),
      ).rejects.toMatchObject({
        code: 'ERR_ISSUER_DATA_DIR',
        path: join(dataDir, 'issuer.json'),
      });
      expect(existsSync(join(dataDir, 'issuer.lock'))).toBe(false);
    },
  );
});

describe('a data dir whose CA key and certificate do not belong together', () => {
  it('is refused at start (the issuer would sign client certificates no API server trusting client-ca.crt accepts)', async () => {
    const { openDataDir } = await import('../../src/issuer/state/data-dir/data-dir.js');
    const { copyFileSync } = await import('node:fs');
    const now = new Date('2026-03-01T12:00:00Z');
    const first = mkdtempSync(join(root, 'ca-a-'));
    const second = mkdtempSync(join(root, 'ca-b-'));
    await openDataDir(first, 'p1', now);
    await openDataDir(second, 'p1', now);
    // A restore that mixed two backups.
    copyFileSync(join(second, 'client-ca.key'), join(first, 'client-ca.key'));
    await expect(openDataDir(first, 'p1', now)).rejects.toMatchObject({
      code: 'ERR_ISSUER_DATA_DIR',
      path: join(first, 'client-ca.crt'),
    });
  });
});
