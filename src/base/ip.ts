/**
 * IP addresses as bytes, for the protocols that carry them so (a SOCKS5 CONNECT to an IPv6 literal, an iPAddress
 * SAN of the issuer's serving certificate). Pure: no built-in is loaded, the address is taken as already validated
 * (`net.isIP(address) === 6`).
 */

/** The 16 bytes of an IPv6 address (`::` and an embedded dotted IPv4 tail understood). */
export function ipv6Bytes(address: string): Buffer {
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const words = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((word) => (word.includes('.') ? ipv4Words(word) : [Number.parseInt(word, 16)]));
  const front = words(head);
  const back = tail === undefined ? [] : words(tail);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  const bytes = Buffer.alloc(16);
  for (const [index, word] of all.entries()) bytes.writeUInt16BE(word, index * 2);
  return bytes;
}

/** A dotted IPv4 address as the two 16-bit words it fills in an IPv6 address. */
function ipv4Words(dotted: string): number[] {
  const [a = 0, b = 0, c = 0, d = 0] = dotted.split('.').map(Number);
  return [(a << 8) | b, (c << 8) | d];
}
