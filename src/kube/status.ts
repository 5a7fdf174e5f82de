/**
 * What an API server said when it refused: the `message` of its Status object (also when the body is still JSON
 * text), else the first 200 characters of a plain-text answer, else undefined. Only for error answers (the transport
 * has already redacted our own bearer token from them).
 */
export function statusMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      const trimmed = (value as string).trim();
      return trimmed === '' ? undefined : trimmed.slice(0, 200);
    }
  }
  const text = (value as { message?: unknown } | null)?.message;
  return typeof text === 'string' && text !== '' ? text : undefined;
}
