import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_FLOOR, nodeFloorProblem } from '../../src/base/node-floor.js';

describe('nodeFloorProblem', () => {
  it('is the floor package.json promises (engines)', () => {
    const { engines } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      engines: { node: string };
    };
    expect(engines.node).toBe(`>=${NODE_FLOOR}`);
  });

  it('accepts the floor and anything newer, by number (not by string)', () => {
    for (const version of [NODE_FLOOR, '22.19.1', '22.20.0', '23.0.0', '24.21.0', '100.0.0', 'v24.0.0']) {
      expect(nodeFloorProblem(version, '/node'), version).toBeUndefined();
    }
  });

  it('refuses anything older, naming the version, the binary and the floor', () => {
    for (const version of ['22.18.9', '22.9.0', '20.20.2', '18.0.0', '8.17.0']) {
      expect(nodeFloorProblem(version, '/usr/bin/node'), version).toBe(
        `Node.js ${version} (/usr/bin/node) is too old: clusterprofile-credentials needs Node.js ${NODE_FLOOR} or newer`,
      );
    }
  });
});
