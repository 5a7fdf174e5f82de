/**
 * Self-authenticating nonces, the Kubernetes state's (./kubernetes-state.ts): a nonce carries the consumer it was
 * issued to and its expiry, authenticated with an HMAC-SHA256 key the replicas share, so issuing one writes nothing
 * and any replica can check one without an API call. Single use is not the nonce's business: the state records a
 * spent nonce under {@link OpenedNonce.id}.
 *
 * 64 bytes, standard base64 (88 characters, the length of the data dir's random nonces):
 * ```text
 *  0       version (1)
 *  1..7    expiry: milliseconds since the epoch, 48-bit big-endian
 *  7..19   consumer tag: the first 12 bytes of SHA-256("clusterprofile nonce consumer\0" + consumer ID)
 *  19..32  13 random bytes
 *  32..64  HMAC-SHA256(key, "clusterprofile issuer nonce v1\0" + bytes 0..32)
 * ```
 * The tag (not the ID itself, which may be 63 characters) is what lets a nonce of another consumer be told from a
 * forged one: the MAC holds, the tag is not this consumer's.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { CredentialsError } from '../../../base/errors.js';
import { checkNonce, unknownNonce } from '../../checks.js';
import { NONCE_BYTES } from '../issuer-state.js';

/** Bytes of the HMAC key (the state's Secret holds exactly this many). */
export const NONCE_KEY_BYTES = 32;
const VERSION = 1;
const TAG_AT = 7;
const TAG_BYTES = 12;
const RANDOM_AT = TAG_AT + TAG_BYTES;
const MAC_AT = 32;
const MAC_DOMAIN = Buffer.from('clusterprofile issuer nonce v1\0');
const NONCE_TEXT = /^[A-Za-z0-9+/]{86}==$/;
/**
 * A sealed expiry further ahead than this is refused as unknown: `--nonce-ttl` is at most an hour, so only a holder
 * of the key (not the issuer) could have sealed it, and its spent record would have to stay as long.
 */
export const MAX_SEALED_LIFETIME_MS = 2 * 3_600_000;

/** A nonce whose MAC, consumer and expiry passed. */
export interface OpenedNonce {
  /** 40 hex digits naming this nonce (from its MAC: unique per nonce, not chosen by a client). */
  id: string;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

const consumerTag = (consumer: string): Buffer =>
  createHash('sha256').update(`clusterprofile nonce consumer\0${consumer}`).digest().subarray(0, TAG_BYTES);

export class NonceSeal {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== NONCE_KEY_BYTES) {
      throw new CredentialsError(
        'ERR_ISSUER_STATE_CORRUPT',
        `the nonce key has ${key.length} bytes, not ${NONCE_KEY_BYTES}`,
      );
    }
    this.#key = Buffer.from(key);
  }

  #mac(body: Buffer): Buffer {
    return createHmac('sha256', this.#key).update(MAC_DOMAIN).update(body).digest();
  }

  /** A new nonce for `consumer` that expires at `expiresAt` (ms). */
  seal(
    consumer: string,
    expiresAt: number,
    random: (size: number) => Buffer = randomBytes,
  ): { nonce: string; id: string } {
    const bytes = Buffer.alloc(NONCE_BYTES);
    bytes[0] = VERSION;
    bytes.writeUIntBE(expiresAt, 1, 6);
    consumerTag(consumer).copy(bytes, TAG_AT);
    random(MAC_AT - RANDOM_AT).copy(bytes, RANDOM_AT, 0, MAC_AT - RANDOM_AT);
    const mac = this.#mac(bytes.subarray(0, MAC_AT));
    mac.copy(bytes, MAC_AT);
    return { nonce: bytes.toString('base64'), id: mac.subarray(0, 20).toString('hex') };
  }

  /**
   * The nonce checked for `consumer` at `now`, with the codes of {@link checkNonce}: ERR_TENANT_NONCE_UNKNOWN (not
   * 88 base64 characters, another version, a MAC that does not verify — forged, altered, or made with another key),
   * ERR_TENANT_NONCE_WRONG_CONSUMER, ERR_TENANT_NONCE_EXPIRED. An expiry beyond {@link MAX_SEALED_LIFETIME_MS} from
   * `now` is unknown too. Whether it was spent is the caller's to find out.
   */
  open(nonce: string, consumer: string, now: Date): OpenedNonce {
    if (!NONCE_TEXT.test(nonce)) throw unknownNonce();
    const bytes = Buffer.from(nonce, 'base64');
    if (bytes.length !== NONCE_BYTES || bytes[0] !== VERSION) throw unknownNonce();
    const mac = this.#mac(bytes.subarray(0, MAC_AT));
    if (!timingSafeEqual(mac, bytes.subarray(MAC_AT))) throw unknownNonce();
    const expiresAt = bytes.readUIntBE(1, 6);
    if (expiresAt > now.getTime() + MAX_SEALED_LIFETIME_MS) throw unknownNonce();
    const ours = timingSafeEqual(bytes.subarray(TAG_AT, TAG_AT + TAG_BYTES), consumerTag(consumer));
    // The consumer named here only decides the code: a nonce whose tag is not this consumer's is another's.
    checkNonce({ consumer: ours ? consumer : `not ${consumer}`, expiresAt, consumed: false }, consumer, now);
    return { id: mac.subarray(0, 20).toString('hex'), expiresAt };
  }
}
