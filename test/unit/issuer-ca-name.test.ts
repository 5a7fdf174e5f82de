import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDataDir } from '../../src/issuer/state/data-dir/data-dir.js';
import { caCommonName } from '../../src/issuer/state/issuer-cas.js';

describe('issuer CA common names', () => {
  it('stay as they were for provider IDs that fit', () => {
    expect(caCommonName('client', 'p1')).toBe('clusterprofile issuer client CA p1');
    const id = 'a'.repeat(31);
    expect(caCommonName('serving', id)).toBe(`clusterprofile issuer serving CA ${id}`);
  });

  it('fit 64 characters for long IDs, and two long IDs with the same start name different CAs', () => {
    const long = `${'x'.repeat(200)}-one`;
    const other = `${'x'.repeat(200)}-two`;
    for (const id of [long, 'b'.repeat(63), 'c'.repeat(253)]) {
      const name = caCommonName('serving', id);
      expect(name.length).toBeLessThanOrEqual(64);
      expect(name).toMatch(/^clusterprofile issuer serving CA [a-z]+~[0-9a-f]{8}$/);
    }
    expect(caCommonName('client', long)).not.toBe(caCommonName('client', other));
  });

  it('a data dir for a 253-character provider ID holds CAs whose CN is at most 64 characters', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cpc-ca-name-'));
    try {
      const data = await openDataDir(join(dir, 'data'), 'd'.repeat(253), new Date('2026-03-01T12:00:00Z'));
      for (const ca of [data.clientCa, data.servingCa]) {
        const cn = /CN=(.*)/.exec(new X509Certificate(ca.certificatePem).subject)?.[1] ?? '';
        expect(cn.length).toBeLessThanOrEqual(64);
        expect(cn.length).toBeGreaterThan(40);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
