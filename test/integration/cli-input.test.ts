/** Commands that read a document or key file: an unreadable file is a coded error, exit 1, nothing on stdout. */
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { runNode } from '../helpers/process.js';

const CLI = join(import.meta.dirname, '../../bin/clusterprofile.mjs');
const missing = '/nonexistent/clusterprofile-test/input.yaml';

test.each([
  [
    ['identity', 'import', missing, '--cluster-id', 'c1', '--key-file', '/nonexistent/key'],
    'ERR_IDENTITY_READ: cannot read the Identity: ENOENT',
  ],
  [
    ['issuer', 'trust', '--data-dir', '/nonexistent/data', '--cluster-id', 'c1', '--public-key', missing],
    `ERR_ISSUER_CONFIG: cannot read --public-key ${missing}: ENOENT`,
  ],
  [
    ['tenant', 'accept', missing, '--data-dir', '/nonexistent/data'],
    `ERR_TENANT_INPUT: cannot read ${missing}: ENOENT`,
  ],
])('clusterprofile %j', async (args, code) => {
  const result = await runNode(CLI, args);
  expect(result.stdout).toBe('');
  expect(result.code).toBe(1);
  expect(result.stderr).toContain(code);
  expect(result.stderr).not.toMatch(/\n\s+at /);
});

test.each([
  [
    ['issuer', 'trust', '--data-dir', '/nonexistent/data', '--cluster-id', 'c1'],
    'ERR_USAGE: issuer trust needs --public-key (at --public-key)',
  ],
  [
    ['tenant', 'generate', '--cluster-id', 'c1', '--provider-cluster-id', 'p1', '--key-file', '/nonexistent/key'],
    'ERR_USAGE: tenant generate needs --nonce (at --nonce)',
  ],
])('a flag the action needs is a usage error: clusterprofile %j', async (args, message) => {
  const result = await runNode(CLI, args);
  expect(result.stdout).toBe('');
  expect(result.code).toBe(2);
  expect(result.stderr).toContain(message);
});
