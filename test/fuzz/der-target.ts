/**
 * Differential fuzz target `der`: the CSRs we build (src/wire/tenant-cert/csr.ts over der.ts) and the DER we parse,
 * against @peculiar/asn1-csr (a maintained ASN.1 schema library, test-only) and `openssl req -verify`.
 *
 * - Built CSRs (random subjects, each key type): verified by OpenSSL (one case in sixteen: it is a process each) and
 *   decoded by the library field by field — version, subject in order with each value's string type, public key,
 *   signature algorithm — and read back by our parser to the same fields.
 * - Mutated DER (bytes flipped, inserted, cut; lengths re-encoded; the request info mutated and signed again, so the
 *   signature still holds): our parser and the library give the same verdict; where both read it, the same subject,
 *   key, extensions, SANs, attributes and signature validity. Our parser may only fail with a coded error
 *   (ERR_TENANT_BAD_PEM, ERR_TENANT_UNSUPPORTED_KEY), never anything else, and may refuse more only as
 *   {@link OUR_REFUSALS} lists (docs/explanation/security.md, "How we test it").
 */
import { spawn } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, type KeyObject, verify } from 'node:crypto';
import { CertificationRequest, CertificationRequestInfo } from '@peculiar/asn1-csr';
import { AsnConvert } from '@peculiar/asn1-schema';
import { type AttributeValue, Extensions, SubjectAlternativeName } from '@peculiar/asn1-x509';
import { isCredentialsError } from '../../src/base/errors.js';
import { buildCsr, csrPem, OID, type ParsedCsr, parseCsrSync } from '../../src/wire/tenant-cert/csr.js';
import { bitString, objectIdentifier, readElement, sequence, set, tlv } from '../../src/wire/tenant-cert/der.js';
import { signBytes, spkiDer } from '../../src/wire/tenant-cert/keys.js';
import { mutateBytes, type Random } from './random.js';
import { type FuzzSession, type FuzzTarget, Tally } from './runner.js';

/** A CSR our builder makes (OpenSSL must verify it when `openssl` is set; every field must decode), or any DER. */
export type DerCase =
  | { kind: 'built'; key: number; commonName: string; organizations: string[]; openssl: boolean }
  | { kind: 'der'; der: Buffer };

/** What both sides read from a CSR, in one shape. */
interface Fields {
  subject: string[];
  spki: string;
  extensions: string[];
  subjectAltNames: string[];
  otherAttributes: string[];
  signatureValid: boolean;
}

/** Inputs our parser refuses and the library reads: each a documented refusal of ours. */
export const OUR_REFUSALS: ReadonlyArray<{ name: string; applies: (reason: string) => boolean }> = [
  {
    name: 'a CSR version other than v1 (0)',
    applies: (reason) => reason.includes('unsupported CSR version'),
  },
  {
    name: 'a subject value that is not a UTF8String, PrintableString, IA5String, TeletexString or BMPString',
    applies: (reason) => reason.includes('unsupported string type'),
  },
  {
    name: 'an empty subject value (X.520: a DirectoryString has at least one character)',
    applies: (reason) => reason.includes('empty subject attribute value'),
  },
  {
    name: 'a public key other than Ed25519, ECDSA P-256 and RSA (2048 bits and up), or one node:crypto cannot read',
    applies: (reason) => reason.startsWith('ERR_TENANT_UNSUPPORTED_KEY'),
  },
];

const ALPHABETS = [
  'abcdefghijklmnopqrstuvwxyz0123456789',
  "ABC xyz'()+,-./:=?",
  'äöü€😀∑ ',
  '<>*@&;_!"#$%',
  '\u0000\t\n',
];

function text(random: Random, max: number): string {
  let out = '';
  const length = random.int(0, max);
  for (let index = 0; index < length; index += 1) out += random.pick([...random.pick(ALPHABETS)]);
  return out;
}

/** A string of one of the ASN.1 types a subject value may have, or one we do not read. */
function stringValue(random: Random): Buffer {
  const value = text(random, 20);
  switch (random.int(0, 6)) {
    case 0:
      return tlv(0x13, Buffer.from(value.replace(/[^A-Za-z0-9 '()+,\-./:=?]/g, 'x'), 'latin1'));
    case 1:
      return tlv(0x16, Buffer.from(value.replace(/[^\x20-\x7e]/g, 'x'), 'latin1'));
    case 2:
      return tlv(0x14, Buffer.from(value.replace(/[^\x20-\x7e]/g, 'x'), 'latin1'));
    case 3:
      return tlv(0x1e, Buffer.from(value.replace(/[\u{10000}-\u{10ffff}]/gu, 'x'), 'utf16le').swap16());
    case 4:
      return random.chance(0.5) ? tlv(0x1c, Buffer.alloc(4 * random.int(0, 3), 0x41)) : tlv(0x02, Buffer.from([1]));
    default:
      return tlv(0x0c, Buffer.from(value, 'utf8'));
  }
}

function generalName(random: Random): Buffer {
  switch (random.int(0, 4)) {
    case 0:
      return tlv(0x82, Buffer.from(`${text(random, 8) || 'a'}.example`, 'latin1'));
    case 1:
      return tlv(0x81, Buffer.from('someone@example.com', 'latin1'));
    case 2:
      return tlv(0x86, Buffer.from('https://example.com/x', 'latin1'));
    case 3:
      return tlv(0x87, random.bytes(random.chance(0.5) ? 4 : 16));
    default:
      return tlv(0x88, objectIdentifier('1.2.3.4'));
  }
}

/** A CertificationRequestInfo beyond what our builder writes: several RDNs, extensions, SANs, other attributes. */
function richInfo(random: Random, key: KeyObject): Buffer {
  const rdns = Array.from({ length: random.int(0, 4) }, () =>
    set(
      ...Array.from({ length: random.int(1, 2) }, () =>
        sequence(
          objectIdentifier(random.pick([OID.commonName, OID.organization, '2.5.4.11', '2.5.4.7'])),
          stringValue(random),
        ),
      ),
    ),
  );
  const extensions = Array.from({ length: random.int(0, 3) }, () => {
    const type = random.pick([OID.subjectAltName, OID.keyUsage, OID.basicConstraints, OID.extKeyUsage]);
    const value =
      type === OID.subjectAltName
        ? sequence(...Array.from({ length: random.int(1, 3) }, () => generalName(random)))
        : type === OID.keyUsage
          ? bitString(Buffer.from([0x80]))
          : sequence();
    const critical = random.chance(0.3) ? [tlv(0x01, Buffer.from([0xff]))] : [];
    return sequence(objectIdentifier(type), ...critical, tlv(0x04, value));
  });
  const attributes: Buffer[] = [];
  if (extensions.length > 0)
    attributes.push(sequence(objectIdentifier(OID.extensionRequest), set(sequence(...extensions))));
  if (random.chance(0.2))
    attributes.push(sequence(objectIdentifier('1.2.840.113549.1.9.7'), set(tlv(0x0c, Buffer.from('pw')))));
  return sequence(tlv(0x02, Buffer.from([0])), sequence(...rdns), spkiDer(key), tlv(0xa0, ...attributes));
}

const SIGNATURE_ALGORITHM: Record<string, Buffer> = {
  ed25519: sequence(objectIdentifier('1.3.101.112')),
  ec: sequence(objectIdentifier('1.2.840.10045.4.3.2')),
  rsa: sequence(objectIdentifier('1.2.840.113549.1.1.11'), tlv(0x05)),
};

const signed = (info: Buffer, key: KeyObject): Buffer =>
  sequence(info, SIGNATURE_ALGORITHM[key.asymmetricKeyType!]!, bitString(signBytes(key, info)));

/** Every TLV header's length re-encoded in long form at one place: BER, which both readers take. */
function longFormLength(random: Random, der: Buffer): Buffer {
  const offsets: number[] = [];
  const walk = (from: number, to: number): void => {
    for (let offset = from; offset < to; ) {
      const element = readElement(der, offset);
      if (der[offset + 1]! < 0x80) offsets.push(offset);
      if ((element.tag & 0x20) !== 0) walk(element.end - element.value.length, element.end);
      offset = element.end;
    }
  };
  walk(0, der.length);
  if (offsets.length === 0) return der;
  const at = random.pick(offsets);
  const out = Buffer.concat([der.subarray(0, at + 1), Buffer.from([0x81, der[at + 1]!]), der.subarray(at + 2)]);
  // The enclosing lengths now count one byte too few: the mutation is a length change, which is the point.
  return out;
}

/** RFC 8410, RFC 5758 and RFC 4055's signature algorithms for the three key types, SHA-1 left out (RFC 9155). */
const REFERENCE_ALGORITHMS: Record<string, { digest: string | null; keyType: string }> = {
  '1.3.101.112': { digest: null, keyType: 'ed25519' },
  '1.2.840.10045.4.3.2': { digest: 'sha256', keyType: 'ec' },
  '1.2.840.10045.4.3.3': { digest: 'sha384', keyType: 'ec' },
  '1.2.840.10045.4.3.4': { digest: 'sha512', keyType: 'ec' },
  '1.2.840.113549.1.1.11': { digest: 'sha256', keyType: 'rsa' },
  '1.2.840.113549.1.1.12': { digest: 'sha384', keyType: 'rsa' },
  '1.2.840.113549.1.1.13': { digest: 'sha512', keyType: 'rsa' },
};

const hex = (bytes: ArrayBuffer | Uint8Array): string => Buffer.from(bytes as ArrayBuffer).toString('hex');

function referenceString(value: AttributeValue): string {
  const found = value.utf8String ?? value.printableString ?? value.ia5String ?? value.teletexString ?? value.bmpString;
  // UniversalString, or not a string at all: the library reads it, our parser refuses it (a listed refusal).
  return found ?? `(${value.universalString === undefined ? 'any' : 'universalString'})`;
}

/** IP SANs in one form: the address as node's URL parser writes it. */
const canonicalIp = (ip: string): string => (ip.includes(':') ? new URL(`http://[${ip}]/`).hostname : ip);

/**
 * The library's reading of raw DER inside the request (the extensionRequest's Extensions, a SAN's GeneralNames), held
 * to DER as the whole request is: what does not encode back the same is refused (its BER reader matches an element
 * by its contents even under another tag).
 */
function strictParse<T>(raw: ArrayBuffer, type: new () => T): T {
  const parsed = AsnConvert.parse(raw, type);
  if (hex(AsnConvert.serialize(parsed)) !== hex(raw))
    throw new Error('not DER: the library encodes it back differently');
  return parsed;
}

/** The key as node:crypto writes it back (RSA parameters other than NULL are dropped by OpenSSL, on both sides). */
function nodeSpki(spki: Buffer): string {
  try {
    return hex(createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ type: 'spki', format: 'der' }));
  } catch {
    return 'unreadable by node:crypto';
  }
}

/** The fields as the library decodes them; throws what it refuses. */
function referenceFields(der: Buffer): { fields: Fields; version: number } {
  const request = AsnConvert.parse(der, CertificationRequest);
  // DER is canonical: bytes that decode but encode back differently (long-form short lengths, trailing bytes, BER
  // indefinite lengths, which the library's BER reader takes) are not DER.
  if (hex(AsnConvert.serialize(request)) !== hex(der))
    throw new Error('not DER: the library encodes it back differently');
  const info = request.certificationRequestInfo;
  const spki = Buffer.from(AsnConvert.serialize(info.subjectPKInfo));
  const subject = info.subject.flatMap((rdn) => rdn.map((pair) => `${pair.type}=${referenceString(pair.value)}`));
  const extensions: string[] = [];
  const subjectAltNames: string[] = [];
  const otherAttributes: string[] = [];
  for (const attribute of info.attributes ?? []) {
    if (attribute.type !== OID.extensionRequest) {
      otherAttributes.push(attribute.type);
      continue;
    }
    for (const list of attribute.values) {
      for (const extension of strictParse(list, Extensions)) {
        extensions.push(`${extension.extnID}:${extension.critical}:${hex(extension.extnValue.buffer)}`);
        if (extension.extnID !== OID.subjectAltName) continue;
        for (const name of strictParse(extension.extnValue.buffer, SubjectAlternativeName)) {
          if (name.dNSName !== undefined) subjectAltNames.push(`dns:${name.dNSName}`);
          else if (name.rfc822Name !== undefined) subjectAltNames.push(`email:${name.rfc822Name}`);
          else if (name.uniformResourceIdentifier !== undefined)
            subjectAltNames.push(`url:${name.uniformResourceIdentifier}`);
          else if (name.iPAddress !== undefined) subjectAltNames.push(`ip:${canonicalIp(name.iPAddress)}`);
          else subjectAltNames.push('other');
        }
      }
    }
  }
  let signatureValid = false;
  try {
    const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    const algorithm = REFERENCE_ALGORITHMS[request.signatureAlgorithm.algorithm];
    const parameters = request.signatureAlgorithm.parameters;
    const options = key.asymmetricKeyType === 'ec' ? { key, dsaEncoding: 'der' as const } : key;
    signatureValid =
      algorithm !== undefined &&
      algorithm.keyType === key.asymmetricKeyType &&
      (parameters === undefined || parameters === null || hex(parameters) === '0500') &&
      verify(
        algorithm.digest,
        Buffer.from(request.certificationRequestInfoRaw!),
        options,
        Buffer.from(request.signature),
      );
  } catch {
    signatureValid = false;
  }
  return {
    version: info.version,
    fields: { subject, spki: nodeSpki(spki), extensions, subjectAltNames, otherAttributes, signatureValid },
  };
}

/** Whether the library reads the CertificationRequestInfo inside `der` as DER (whatever follows it). */
function infoIsDer(der: Buffer): boolean {
  try {
    const info = readElement(readElement(der).value).raw;
    return hex(AsnConvert.serialize(AsnConvert.parse(info, CertificationRequestInfo))) === hex(info);
  } catch {
    return false;
  }
}

function ourFields(parsed: ParsedCsr): Fields {
  const spki = parsed.publicKey.export({ type: 'spki', format: 'der' });
  return {
    subject: parsed.subject.map((attribute) => `${attribute.type}=${attribute.value}`),
    spki: hex(spki),
    extensions: parsed.extensions.map((e) => `${e.type}:${e.critical}:${hex(e.value)}`),
    subjectAltNames: parsed.subjectAltNames.map((name) =>
      name.startsWith('ip:') ? `ip:${canonicalIp(name.slice(3))}` : name.startsWith('other:') ? 'other' : name,
    ),
    otherAttributes: parsed.otherAttributes,
    signatureValid: parsed.signatureValid,
  };
}

/** `openssl req -verify` on a PEM CSR: its verdict and what it said. */
function opensslVerifies(pem: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('openssl', ['req', '-verify', '-noout'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ ok: code === 0 && /verify OK/i.test(output), output: output.trim() }));
    child.stdin.end(pem);
  });
}

type Verdict = { ok: true; fields: Fields } | { ok: false; reason: string };

function ours(der: Buffer): Verdict {
  try {
    return { ok: true, fields: ourFields(parseCsrSync(der)) };
  } catch (error) {
    if (!isCredentialsError(error)) throw new Error(`our parser threw an uncoded ${String(error)}`);
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return { ok: false, reason: `${error.code}${cause}` };
  }
}

export function derTarget(): FuzzTarget<DerCase> {
  return {
    name: 'der',
    async open(): Promise<FuzzSession<DerCase>> {
      const keys = [
        generateKeyPairSync('ed25519').privateKey,
        generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey,
        generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey,
      ];
      // Whole requests to mutate: two of our builder's per key type.
      const seeds: Buffer[] = [];
      for (const key of keys) {
        for (const subject of [
          { commonName: 'consumer-1' },
          { commonName: 'x', organizations: ['system:masters', 'é'] },
        ]) {
          seeds.push((await buildCsr(key, subject)).der);
        }
      }

      const tally = new Tally();
      const check = async (input: DerCase): Promise<string | undefined> => {
        const der =
          input.kind === 'der'
            ? input.der
            : (await buildCsr(keys[input.key]!, { commonName: input.commonName, organizations: input.organizations }))
                .der;
        let reference: ReturnType<typeof referenceFields> | undefined;
        let referenceError = '';
        try {
          reference = referenceFields(der);
        } catch (error) {
          referenceError = String(error);
        }
        let our: Verdict;
        try {
          our = ours(der);
        } catch (error) {
          return String((error as Error).message);
        }
        if (input.kind === 'built') {
          if (!our.ok || reference === undefined) {
            return `a CSR we built does not read back: ${JSON.stringify(our)} ${referenceError}`;
          }
          if (reference.version !== 0) return `a CSR we built has version ${reference.version}`;
          const expected = [
            ...input.organizations.map((value) => `${OID.organization}=${value}`),
            `${OID.commonName}=${input.commonName}`,
          ];
          if (JSON.stringify(reference.fields.subject) !== JSON.stringify(expected)) {
            return `a CSR we built for ${JSON.stringify(expected)} has the subject ${JSON.stringify(reference.fields.subject)}`;
          }
          if (!reference.fields.signatureValid) return 'a CSR we built has a signature the reference does not verify';
          if (input.openssl) {
            const openssl = await opensslVerifies(csrPem(der));
            if (!openssl.ok) return `openssl req -verify refuses a CSR we built: ${openssl.output}`;
          }
        }
        if (input.kind === 'built') tally.add(input.openssl ? 'built (openssl verified)' : 'built');
        if (!our.ok) {
          if (reference === undefined) return void tally.add('both refuse');
          const reason = our.reason;
          const listed = OUR_REFUSALS.find((refusal) => refusal.applies(reason));
          if (listed !== undefined) return void tally.add(`listed: ${listed.name}`);
          return `we refuse (${reason}), the library reads ${JSON.stringify(reference.fields).slice(0, 300)}`;
        }
        if (reference === undefined && !our.fields.signatureValid && infoIsDer(der)) {
          // The request info is sound and only the signature part is not: we read on and report the signature
          // invalid, which the issuer refuses (ERR_TENANT_CSR_SIGNATURE_INVALID); the library refuses outright. Same verdict.
          return void tally.add('signature part malformed: we report it invalid, the library refuses');
        }
        if (reference === undefined) {
          return `we read ${JSON.stringify(our.fields).slice(0, 300)}, the library refuses (${referenceError})`;
        }
        if (reference.version !== 0) return `we read a CSR of version ${reference.version}`;
        if (JSON.stringify(our.fields) !== JSON.stringify(reference.fields)) {
          return `we read ${JSON.stringify(our.fields)}, the library reads ${JSON.stringify(reference.fields)}`;
        }
        return void tally.add(
          our.fields.signatureValid ? 'both read, signature valid' : 'both read, signature invalid',
        );
      };

      return {
        generate(random) {
          const key = random.int(0, keys.length - 1);
          const mode = random.int(0, 9);
          if (mode <= 2) {
            const organizations = Array.from({ length: random.int(0, 3) }, () => text(random, 12) || 'o');
            return {
              kind: 'built',
              key,
              commonName: text(random, 24) || 'cn',
              organizations,
              openssl: random.chance(1 / 16),
            };
          }
          const base = random.chance(0.3) ? random.pick(seeds) : signed(richInfo(random, keys[key]!), keys[key]!);
          if (mode <= 4) return { kind: 'der', der: base };
          if (mode <= 6) {
            // The request info mutated, then signed again: the signature holds whatever the parsers make of it.
            const info = readElement(readElement(base).value);
            return { kind: 'der', der: signed(mutateBytes(random, info.raw), keys[key]!) };
          }
          if (mode === 7) return { kind: 'der', der: longFormLength(random, base) };
          return { kind: 'der', der: mutateBytes(random, base) };
        },
        check,
        *shrink(input) {
          if (input.kind === 'built') {
            for (let index = 0; index < input.organizations.length; index += 1) {
              yield { ...input, organizations: input.organizations.filter((_, other) => other !== index) };
            }
            for (let length = 1; length < input.commonName.length; length += 1) {
              yield { ...input, commonName: input.commonName.slice(0, length) };
            }
            return;
          }
          const { der } = input;
          for (let size = Math.floor(der.length / 2); size >= 1; size = Math.floor(size / 2)) {
            for (let from = 0; from + size <= der.length; from += size) {
              yield { kind: 'der', der: Buffer.concat([der.subarray(0, from), der.subarray(from + size)]) };
            }
          }
        },
        summary: () => tally.toString(),
        serialize: (input) =>
          input.kind === 'der'
            ? { bytes: input.der, extension: 'der' }
            : {
                bytes: `${JSON.stringify({ ...input, key: keys[input.key]!.asymmetricKeyType })}\n`,
                extension: 'json',
              },
        close: async () => undefined,
      };
    },
  };
}
