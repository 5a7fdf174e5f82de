import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/base/sha256.js';

const reference = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('sha256Hex', () => {
  it('matches the FIPS 180-4 examples', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  it('matches node:crypto at every length around the block boundaries and for non-ASCII text', () => {
    for (let length = 0; length < 300; length++) {
      const text = randomBytes(length).toString('latin1');
      expect(sha256Hex(text)).toBe(reference(text));
    }
    expect(sha256Hex('clusterprofile ✓ 集群 🔑')).toBe(reference('clusterprofile ✓ 集群 🔑'));
    const large = randomBytes(200_000).toString('base64');
    expect(sha256Hex(large)).toBe(reference(large));
  });
});
