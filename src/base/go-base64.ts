/**
 * Base64 as Go's `encoding/json` reads a `[]byte` field (base64.StdEncoding): padded standard alphabet, with CR and
 * LF ignored anywhere. Unpadded text, spaces, the URL alphabet or data after the padding are refused.
 */
const PADDED_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const LINE_BREAKS = /[\r\n]/g;

/** Whether Go decodes `text` as a `[]byte` field. */
export function isGoBase64(text: string): boolean {
  return PADDED_BASE64.test(text.replace(LINE_BREAKS, ''));
}

/** The bytes of Go-valid base64 encoded again as Go writes them (no line breaks, canonical padding bits). */
export function canonicalBase64(text: string): string {
  return Buffer.from(text.replace(LINE_BREAKS, ''), 'base64').toString('base64');
}
