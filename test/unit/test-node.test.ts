/**
 * The floor run (scripts/test-node-floor.mjs) runs on the Node it names, and so do the children the tests start
 * through PATH (the bins' `#!/usr/bin/env node`, kubectl's exec of a plugin). Only under that runner: it sets
 * CPC_TEST_NODE.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const expected = process.env['CPC_TEST_NODE'];

describe.runIf(expected !== undefined)('the floor run (CPC_TEST_NODE)', () => {
  it('runs the tests on that Node', () => {
    expect(process.versions.node).toBe(expected);
  });

  it('a child that finds `node` on PATH gets that Node too', () => {
    const child = spawnSync('/usr/bin/env', ['node', '-p', 'process.versions.node'], { encoding: 'utf8' });
    expect(child.stdout.trim()).toBe(expected);
  });
});
