import { describe, expect, it } from 'vitest';
import { statusMessage } from '../../src/kube/status.js';

describe('what an API server said when it refused', () => {
  it('the message of a Status object, parsed or still JSON text', () => {
    const status = {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: 'secrets "x" is forbidden',
      code: 403,
    };
    expect(statusMessage(status)).toBe('secrets "x" is forbidden');
    expect(statusMessage(JSON.stringify(status))).toBe('secrets "x" is forbidden');
  });

  it('a plain-text answer, cut to 200 characters; nothing for empty or message-less bodies', () => {
    expect(statusMessage('  upstream connect error  ')).toBe('upstream connect error');
    expect(statusMessage('x'.repeat(300))).toHaveLength(200);
    expect(statusMessage('')).toBeUndefined();
    expect(statusMessage({ kind: 'Status', message: '' })).toBeUndefined();
    expect(statusMessage({ items: [] })).toBeUndefined();
    expect(statusMessage(null)).toBeUndefined();
  });
});
