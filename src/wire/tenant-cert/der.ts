/**
 * The little DER the issuer's hot path needs, by hand: encode a client certificate's TBSCertificate and the
 * Certificate around its signature, and split a PKCS#10 request into (info, algorithm, signature) so its
 * self-signature is checked with node:crypto. @peculiar/x509 does the same through WebCrypto and a generic ASN.1
 * schema layer, far slower per certificate; this is what keeps the issuer's handshake rate at its target
 * (docs/performance.md).
 * Everything else (CAs, parsing for inspection) stays with @peculiar/x509.
 */

/** One TLV: tag byte(s) and contents. */
export function tlv(tag: number, ...contents: Uint8Array[]): Buffer {
  const body = Buffer.concat(contents);
  return Buffer.concat([Buffer.from([tag]), encodeLength(body.length), body]);
}

function encodeLength(length: number): Buffer {
  if (length < 0x80) {
    return Buffer.from([length]);
  }
  const bytes: number[] = [];
  for (let rest = length; rest > 0; rest = Math.floor(rest / 256)) {
    bytes.unshift(rest & 0xff);
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export const sequence = (...contents: Uint8Array[]): Buffer => tlv(0x30, ...contents);
export const set = (...contents: Uint8Array[]): Buffer => tlv(0x31, ...contents);
export const explicit = (tagNumber: number, ...contents: Uint8Array[]): Buffer => tlv(0xa0 | tagNumber, ...contents);
export const octetString = (bytes: Uint8Array): Buffer => tlv(0x04, bytes);
export const utf8String = (text: string): Buffer => tlv(0x0c, Buffer.from(text, 'utf8'));
export const bitString = (bytes: Uint8Array): Buffer => tlv(0x03, Buffer.from([0]), bytes);
export const booleanTrue = (): Buffer => tlv(0x01, Buffer.from([0xff]));

/** A non-negative INTEGER from big-endian magnitude bytes. */
export function unsignedInteger(magnitude: Uint8Array): Buffer {
  let bytes = Buffer.from(magnitude);
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0) {
    start++;
  }
  bytes = bytes.subarray(start);
  if ((bytes[0] ?? 0) & 0x80) {
    bytes = Buffer.concat([Buffer.from([0]), bytes]);
  }
  return tlv(0x02, bytes);
}

export function objectIdentifier(oid: string): Buffer {
  const parts = oid.split('.').map(Number);
  const bytes: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const part of parts.slice(2)) {
    const chunk: number[] = [part & 0x7f];
    for (let rest = Math.floor(part / 128); rest > 0; rest = Math.floor(rest / 128)) {
      chunk.unshift((rest & 0x7f) | 0x80);
    }
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** UTCTime until 2049, GeneralizedTime after (RFC 5280 §4.1.2.5), whole seconds, Z. */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // 2026-01-02T03:04:05.678Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, ''); // 20260102030405
  const year = date.getUTCFullYear();
  return year < 2050 && year >= 1950
    ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`))
    : tlv(0x18, Buffer.from(`${digits}Z`));
}

/** A Name of single-valued RDNs, UTF8String values, in the order given. */
export function name(attributes: ReadonlyArray<{ oid: string; value: string }>): Buffer {
  return sequence(
    ...attributes.map((attribute) => set(sequence(objectIdentifier(attribute.oid), utf8String(attribute.value)))),
  );
}

export interface DerElement {
  tag: number;
  /** The whole TLV. */
  raw: Buffer;
  /** The contents. */
  value: Buffer;
}

/** Reads one TLV at `offset`; throws RangeError on anything malformed or not DER (a length longer than it needs). */
export function readElement(input: Buffer, offset = 0): DerElement & { end: number } {
  const tag = input[offset];
  let lengthByte = input[offset + 1];
  if (tag === undefined || lengthByte === undefined || (tag & 0x1f) === 0x1f) {
    throw new RangeError('truncated or unsupported DER');
  }
  let cursor = offset + 2;
  let length = lengthByte;
  if (lengthByte & 0x80) {
    const count = lengthByte & 0x7f;
    if (count === 0 || count > 4) {
      throw new RangeError('unsupported DER length');
    }
    length = 0;
    for (let index = 0; index < count; index++) {
      lengthByte = input[cursor++];
      if (lengthByte === undefined) {
        throw new RangeError('truncated DER length');
      }
      length = length * 256 + lengthByte;
    }
    // DER writes a length in the fewest bytes: short form below 128, no leading zero byte in the long form.
    if (length < 0x80 || input[offset + 2] === 0) {
      throw new RangeError('non-minimal DER length');
    }
  }
  const end = cursor + length;
  if (end > input.length) {
    throw new RangeError('truncated DER');
  }
  return { tag, raw: input.subarray(offset, end), value: input.subarray(cursor, end), end };
}

/** The elements inside a constructed element's contents. */
export function children(contents: Buffer): DerElement[] {
  const elements: DerElement[] = [];
  for (let offset = 0; offset < contents.length; ) {
    const element = readElement(contents, offset);
    elements.push(element);
    offset = element.end;
  }
  return elements;
}

/**
 * An OBJECT IDENTIFIER's contents as dotted text. Each subidentifier is base 128, the first one holding the first
 * two arcs (40 × first + second, so `2.999` takes two bytes); an empty value, a subidentifier with a leading 0x80
 * byte or one cut short is a RangeError, never read as a shorter OID.
 */
export function decodeObjectIdentifier(contents: Buffer): string {
  const subidentifiers: number[] = [];
  let value = 0;
  let started = false;
  for (const byte of contents) {
    if (!started && byte === 0x80) throw new RangeError('non-minimal OBJECT IDENTIFIER');
    started = true;
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER / 128) throw new RangeError('OBJECT IDENTIFIER arc too large');
    if ((byte & 0x80) === 0) {
      subidentifiers.push(value);
      value = 0;
      started = false;
    }
  }
  const [first] = subidentifiers;
  if (first === undefined || started) throw new RangeError('truncated OBJECT IDENTIFIER');
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...subidentifiers.slice(1)].join('.');
}

/** A signed structure (Certificate, CertificationRequest): the signed bytes, the algorithm OID, the signature. */
export interface SignedParts {
  signed: Buffer;
  algorithm: string;
  /** Whether the AlgorithmIdentifier carried parameters other than NULL. */
  algorithmParameters: Buffer | undefined;
  signature: Buffer;
}

export function splitSigned(der: Buffer): SignedParts {
  const outer = readElement(der);
  if (outer.tag !== 0x30 || outer.end !== der.length) {
    throw new RangeError('not a DER SEQUENCE');
  }
  const [signed, algorithm, signature, ...rest] = children(outer.value);
  if (signed?.tag !== 0x30 || algorithm?.tag !== 0x30 || signature?.tag !== 0x03 || rest.length > 0) {
    throw new RangeError('not a signed structure');
  }
  const [oid, parameters] = children(algorithm.value);
  if (oid === undefined || oid.tag !== 0x06) {
    throw new RangeError('bad AlgorithmIdentifier');
  }
  if (signature.value[0] !== 0) {
    throw new RangeError('signature BIT STRING with unused bits');
  }
  return {
    signed: signed.raw,
    algorithm: decodeObjectIdentifier(oid.value),
    algorithmParameters: parameters === undefined || parameters.tag === 0x05 ? undefined : parameters.raw,
    signature: signature.value.subarray(1),
  };
}
