// scripts/image/oci-layout.mjs: the layer bytes depend only on the files (not their order), every header carries the
// one mtime and uid/gid 0, parents get directory entries, long paths use the ustar prefix, and bad paths are refused.
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ESM build script without type declarations
import { gzipLayer, tarLayer } from '../../scripts/image/oci-layout.mjs';

interface Entry {
  name: string;
  mode: number;
  uid: number;
  gid: number;
  size: number;
  mtime: number;
  type: string;
}

/** Reads the ustar headers of a tar (an independent reader of what the writer claims). */
function entries(tar: Buffer): Entry[] {
  const found: Entry[] = [];
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((byte) => byte === 0)) break;
    const text = (from: number, length: number): string =>
      header
        .subarray(from, from + length)
        .toString('utf8')
        .replace(/\0.*$/s, '');
    const number = (from: number, length: number): number => Number.parseInt(text(from, length).trim() || '0', 8);
    let sum = 0;
    for (let i = 0; i < 512; i += 1) sum += i >= 148 && i < 156 ? 32 : header[i]!;
    expect(number(148, 8)).toBe(sum);
    expect(text(257, 6)).toBe('ustar');
    const prefix = text(345, 155);
    const name = text(0, 100);
    const size = number(124, 12);
    found.push({
      name: prefix === '' ? name : `${prefix}/${name}`,
      mode: number(100, 8),
      uid: number(108, 8),
      gid: number(116, 8),
      size,
      mtime: number(136, 12),
      type: text(156, 1),
    });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return found;
}

const file = (path: string, text: string, mode = 0o644) => ({ path, data: Buffer.from(text), mode });
const long = `lib/${'d'.repeat(60)}/${'e'.repeat(60)}/main.mjs`;
const files = [
  file('bin/launcher', 'ELF', 0o755),
  file('lib/x/b.mjs', 'b'),
  file('lib/x/a.mjs', 'a'),
  file(long, 'long'),
];

describe('OCI layers', () => {
  it('are the same bytes whatever the order of the files, with sorted entries, parent directories, one mtime, uid/gid 0', () => {
    const tar: Buffer = tarLayer(files, 1_700_000_000);
    expect(tarLayer([...files].reverse(), 1_700_000_000).equals(tar)).toBe(true);
    expect(tarLayer(files, 1_700_000_001).equals(tar)).toBe(false);
    const read = entries(tar);
    expect(read.map((e) => e.name)).toEqual([...read.map((e) => e.name)].sort());
    expect(read.map((e) => `${e.type} ${e.name} ${e.mode.toString(8)}`)).toEqual([
      '5 bin/ 755',
      '0 bin/launcher 755',
      '5 lib/ 755',
      `5 lib/${'d'.repeat(60)}/ 755`,
      `5 lib/${'d'.repeat(60)}/${'e'.repeat(60)}/ 755`,
      `0 ${long} 644`,
      '5 lib/x/ 755',
      '0 lib/x/a.mjs 644',
      '0 lib/x/b.mjs 644',
    ]);
    expect(new Set(read.map((e) => `${e.mtime} ${e.uid} ${e.gid}`))).toEqual(new Set(['1700000000 0 0']));
  });

  it('gzip layers: the diff_id is the digest of the tar, the digest that of the blob, and both are reproducible', () => {
    const layer = gzipLayer(files, 0);
    expect(gunzipSync(layer.blob).equals(tarLayer(files, 0))).toBe(true);
    expect(layer.diffId).not.toBe(layer.digest);
    expect(gzipLayer([...files].reverse(), 0)).toMatchObject({
      digest: layer.digest,
      diffId: layer.diffId,
      size: layer.size,
    });
  });

  it('refuses absolute paths, .. and the same path twice', () => {
    expect(() => tarLayer([file('/etc/passwd', 'x')], 0)).toThrow('bad path');
    expect(() => tarLayer([file('lib/../../x', 'x')], 0)).toThrow('bad path');
    expect(() => tarLayer([file('a', 'x'), file('a', 'y')], 0)).toThrow('twice');
  });
});
