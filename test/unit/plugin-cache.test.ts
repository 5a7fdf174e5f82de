import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/base/canonical-json.js';
import {
  cacheDirectory,
  cacheKey,
  cleanDirectory,
  ensurePrivateDirectory,
  readEntry,
  writeEntry,
} from '../../src/plugin/cache.js';

function freshDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'cpc-cache-unit-')), 'cache');
}

describe('cacheKey', () => {
  it('is the same for the same inputs in any key order, different for any other input or provider', () => {
    const a = cacheKey('oidc', {
      issuer: 'https://i',
      scopes: ['openid'],
      cluster: { server: 's', config: { x: 1, y: 2 } },
    });
    const b = cacheKey('oidc', {
      cluster: { config: { y: 2, x: 1 }, server: 's' },
      scopes: ['openid'],
      issuer: 'https://i',
    });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(
      cacheKey('tenant-cert', {
        issuer: 'https://i',
        scopes: ['openid'],
        cluster: { server: 's', config: { x: 1, y: 2 } },
      }),
    ).not.toBe(a);
    expect(
      cacheKey('oidc', {
        issuer: 'https://i',
        scopes: ['openid', 'email'],
        cluster: { server: 's', config: { x: 1, y: 2 } },
      }),
    ).not.toBe(a);
    expect(cacheKey('oidc', undefined)).toBe(cacheKey('oidc', null));
  });

  it('canonical JSON drops undefined and sorts nested keys', () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: [{ z: 1, y: 2 }] } })).toBe('{"a":{"c":[{"y":2,"z":1}]},"b":1}');
  });
});

describe('cacheDirectory', () => {
  const home = () => '/home/u';
  it('--cache-dir wins, then KUBECACHEDIR/clusterprofile/<provider>, then ~/.kube/cache/clusterprofile/<provider>', () => {
    expect(cacheDirectory('oidc', '/flag', { KUBECACHEDIR: '/k' }, home)).toBe('/flag');
    expect(cacheDirectory('oidc', undefined, { KUBECACHEDIR: '/k' }, home)).toBe('/k/clusterprofile/oidc');
    expect(cacheDirectory('oidc', undefined, { KUBECACHEDIR: '' }, home)).toBe(
      '/home/u/.kube/cache/clusterprofile/oidc',
    );
  });

  it('without a flag, KUBECACHEDIR or a home directory (a container without HOME): ERR_PLUGIN_CACHE_IO naming --cache-dir, not an internal error', () => {
    const noHome = (): string => {
      throw Object.assign(new Error('A system error occurred: uv_os_homedir returned ENOENT'), {
        code: 'ERR_SYSTEM_ERROR',
      });
    };
    expect(cacheDirectory('oidc', '/flag', {}, noHome)).toBe('/flag');
    expect(cacheDirectory('oidc', undefined, { KUBECACHEDIR: '/k' }, noHome)).toBe('/k/clusterprofile/oidc');
    expect(() => cacheDirectory('oidc', undefined, {}, noHome)).toThrow(
      expect.objectContaining({
        code: 'ERR_PLUGIN_CACHE_IO',
        path: '--cache-dir',
        hint: expect.stringContaining('KUBECACHEDIR'),
      }),
    );
  });
});

describe('entries', () => {
  const key = 'a'.repeat(64);
  const entry = {
    status: { token: 't', expirationTimestamp: '2030-01-01T00:00:00Z' },
    issuedAt: '2029-12-31T23:00:00.000Z',
    state: { refreshToken: 'r' },
  };

  it('round-trips an entry with the provider state, in a 0600 file of a 0700 directory', async () => {
    const dir = freshDir();
    ensurePrivateDirectory(dir);
    await writeEntry(dir, key, entry);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, `${key}.json`)).mode & 0o777).toBe(0o600);
    expect(readEntry(dir, key)).toEqual({ kind: 'entry', entry, expiresAt: Date.UTC(2030, 0, 1) });
    expect(readdirSync(dir)).toEqual([`${key}.json`]); // no temporary file left
  });

  it('removes temporary files a dead writer of the same key left behind, and only those', async () => {
    const dir = freshDir();
    ensurePrivateDirectory(dir);
    const other = 'd'.repeat(64);
    writeFileSync(join(dir, `${key}.json.0123456789ab.tmp`), '{"partial', { mode: 0o600 });
    writeFileSync(join(dir, `${other}.json.0123456789ab.tmp`), '{"partial', { mode: 0o600 });
    await writeEntry(dir, key, entry);
    expect(readdirSync(dir).sort()).toEqual([`${key}.json`, `${other}.json.0123456789ab.tmp`]);
  });

  it('reports missing and corrupted entries instead of throwing', () => {
    const dir = freshDir();
    ensurePrivateDirectory(dir);
    expect(readEntry(dir, key)).toEqual({ kind: 'missing' });
    for (const [body, reason] of [
      ['{', 'not JSON'],
      // What a power loss may leave under the name (entries are not fsynced): an empty file, or zeros.
      ['', 'not JSON'],
      ['\0'.repeat(512), 'not JSON'],
      [
        JSON.stringify({
          version: 1,
          key: 'b'.repeat(64),
          issuedAt: 'x',
          status: { token: 't', expirationTimestamp: '2030-01-01T00:00:00Z' },
        }),
        'not a cache entry of this version and key',
      ],
      [
        JSON.stringify({ version: 1, key, issuedAt: 'x', status: { token: 't' } }),
        'no status with an expirationTimestamp',
      ],
      [
        JSON.stringify({
          version: 1,
          key,
          issuedAt: 'x',
          status: { clientKeyData: 'k', expirationTimestamp: '2030-01-01T00:00:00Z' },
        }),
        'neither a token nor a certificate and key',
      ],
    ] as const) {
      writeFileSync(join(dir, `${key}.json`), body, { mode: 0o600 });
      expect(readEntry(dir, key)).toEqual({ kind: 'corrupted', reason });
    }
  });

  it('refuses a directory or an entry that group or others can access', () => {
    const dir = freshDir();
    mkdirSync(dir, { mode: 0o700 });
    chmodSync(dir, 0o750);
    expect(() => ensurePrivateDirectory(dir)).toThrow(
      expect.objectContaining({ code: 'ERR_PLUGIN_CACHE_INSECURE', path: dir, hint: `chmod 700 '${dir}'` }),
    );
    chmodSync(dir, 0o700);
    writeFileSync(join(dir, `${key}.json`), '{}', { mode: 0o600 });
    chmodSync(join(dir, `${key}.json`), 0o660);
    expect(() => readEntry(dir, key)).toThrow(
      expect.objectContaining({ code: 'ERR_PLUGIN_CACHE_INSECURE', message: expect.stringContaining('(mode 660)') }),
    );
  });

  it('clean removes entries, free locks and temporary files, and nothing else', async () => {
    const dir = freshDir();
    ensurePrivateDirectory(dir);
    await writeEntry(dir, key, entry);
    writeFileSync(join(dir, `${'b'.repeat(64)}.lock`), '{}');
    writeFileSync(join(dir, `${'c'.repeat(64)}.lock`), '{}');
    writeFileSync(join(dir, `${key}.json.0a1b.tmp`), '');
    writeFileSync(join(dir, 'notes.txt'), 'mine');
    const result = cleanDirectory(dir, (file) => file.includes('c'.repeat(64)));
    expect(result).toEqual({ entries: 1, skippedLocks: 1 });
    expect(readdirSync(dir).sort()).toEqual([`${'c'.repeat(64)}.lock`, 'notes.txt']);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
  });
});
