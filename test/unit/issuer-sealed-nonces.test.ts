import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_SEALED_LIFETIME_MS, NONCE_KEY_BYTES, NonceSeal } from '../../src/issuer/state/kubernetes/sealed-nonces.js';
import { frozenClock } from '../helpers/issuer-fixtures.js';

const key = randomBytes(NONCE_KEY_BYTES);
const seal = new NonceSeal(key);
const clock = frozenClock();
const inAMinute = () => clock.now().getTime() + 60_000;

/** The code `open` refuses with (it must refuse). */
function refusal(nonce: string, consumer: string, at = clock.now(), by = seal): string {
  try {
    by.open(nonce, consumer, at);
  } catch (error) {
    return (error as { code: string }).code;
  }
  throw new Error('the nonce was accepted');
}

/** The nonce with byte `index` flipped. */
function flipped(nonce: string, index: number): string {
  const bytes = Buffer.from(nonce, 'base64');
  bytes[index]! ^= 0x01;
  return bytes.toString('base64');
}

describe('sealed nonces (the Kubernetes state)', () => {
  it('a sealed nonce opens for its consumer until it expires: 88 base64 characters, an id of 40 hex digits', () => {
    const expiresAt = inAMinute();
    const { nonce, id } = seal.seal('consumer-a', expiresAt);
    expect(nonce).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    expect(id).toMatch(/^[0-9a-f]{40}$/);
    expect(seal.open(nonce, 'consumer-a', clock.now())).toEqual({ id, expiresAt });
    // Another replica with the same key opens it too.
    expect(new NonceSeal(Buffer.from(key)).open(nonce, 'consumer-a', new Date(expiresAt - 1))).toEqual({
      id,
      expiresAt,
    });
  });

  it('every nonce is new: same consumer and expiry, other random bytes, another nonce and id', () => {
    const made = Array.from({ length: 64 }, () => seal.seal('consumer-a', inAMinute()));
    expect(new Set(made.map((m) => m.nonce)).size).toBe(64);
    expect(new Set(made.map((m) => m.id)).size).toBe(64);
  });

  it('expired (at its expiry and after): ERR_TENANT_NONCE_EXPIRED', () => {
    const expiresAt = inAMinute();
    const { nonce } = seal.seal('consumer-a', expiresAt);
    expect(refusal(nonce, 'consumer-a', new Date(expiresAt))).toBe('ERR_TENANT_NONCE_EXPIRED');
    expect(refusal(nonce, 'consumer-a', new Date(expiresAt + 3_600_000))).toBe('ERR_TENANT_NONCE_EXPIRED');
  });

  it('a nonce of another consumer: ERR_TENANT_NONCE_WRONG_CONSUMER (before its expiry is looked at)', () => {
    const { nonce } = seal.seal('consumer-a', inAMinute());
    expect(refusal(nonce, 'consumer-b')).toBe('ERR_TENANT_NONCE_WRONG_CONSUMER');
    expect(refusal(nonce, 'consumer-b', new Date(inAMinute() + 1))).toBe('ERR_TENANT_NONCE_WRONG_CONSUMER');
  });

  it('any byte altered — version, expiry, consumer tag, random part, MAC — is ERR_TENANT_NONCE_UNKNOWN', () => {
    const { nonce } = seal.seal('consumer-a', inAMinute());
    for (const index of [0, 1, 6, 7, 18, 19, 31, 32, 63]) {
      expect([index, refusal(flipped(nonce, index), 'consumer-a')]).toEqual([index, 'ERR_TENANT_NONCE_UNKNOWN']);
    }
  });

  it('a later expiry forged into the nonce is refused (the MAC covers it)', () => {
    const { nonce } = seal.seal('consumer-a', clock.now().getTime() - 1000);
    const bytes = Buffer.from(nonce, 'base64');
    bytes.writeUIntBE(inAMinute(), 1, 6);
    expect(refusal(bytes.toString('base64'), 'consumer-a')).toBe('ERR_TENANT_NONCE_UNKNOWN');
  });

  it('sealed with another key (another namespace, or a rotated key): ERR_TENANT_NONCE_UNKNOWN', () => {
    const { nonce } = new NonceSeal(randomBytes(NONCE_KEY_BYTES)).seal('consumer-a', inAMinute());
    expect(refusal(nonce, 'consumer-a')).toBe('ERR_TENANT_NONCE_UNKNOWN');
  });

  it("truncated, padded, not base64, empty, a random 64-byte nonce (the data dir's shape): ERR_TENANT_NONCE_UNKNOWN", () => {
    const { nonce } = seal.seal('consumer-a', inAMinute());
    const bytes = Buffer.from(nonce, 'base64');
    for (const bad of [
      bytes.subarray(0, 63).toString('base64'),
      Buffer.concat([bytes, Buffer.alloc(1)]).toString('base64'),
      nonce.slice(0, 80),
      `${nonce.slice(0, 85)}!==`,
      nonce.replace(/==$/, ''),
      '',
      randomBytes(64).toString('base64'),
    ]) {
      expect(refusal(bad, 'consumer-a')).toBe('ERR_TENANT_NONCE_UNKNOWN');
    }
  });

  it('an expiry further ahead than any --nonce-ttl (sealed by a holder of the key, not the issuer): ERR_TENANT_NONCE_UNKNOWN', () => {
    const far = clock.now().getTime() + MAX_SEALED_LIFETIME_MS;
    expect(seal.open(seal.seal('consumer-a', far).nonce, 'consumer-a', clock.now()).expiresAt).toBe(far);
    expect(refusal(seal.seal('consumer-a', far + 1).nonce, 'consumer-a')).toBe('ERR_TENANT_NONCE_UNKNOWN');
  });

  it('a key of another length is refused as damaged state', () => {
    expect(() => new NonceSeal(randomBytes(16))).toThrow(expect.objectContaining({ code: 'ERR_ISSUER_STATE_CORRUPT' }));
  });
});
