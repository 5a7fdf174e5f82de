/**
 * The tests that run a binary as another user pass wherever the checkout lives: HEAD is cloned into a `mktemp -d`
 * directory (0700: no other user may enter it, as a root user's home), node_modules linked and the build copied in
 * (both are outside git), and those test files run there by vitest as the current user. Before their binaries were
 * staged (test/helpers/other-user.ts), the child could not load `…/bin/clusterprofile-tenant-cert.mjs` from there.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { otherUserProblem } from '../helpers/other-user.js';
import { runCommand } from '../helpers/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FILES = ['test/integration/tenant-cert-key-modes.test.ts', 'test/integration/token-request-tenant-cert.test.ts'];
const PROBLEM = otherUserProblem();
let base: string | undefined;

afterAll(() => {
  if (base !== undefined) rmSync(base, { recursive: true, force: true });
});

describe.skipIf(PROBLEM !== undefined)(
  `a clone under a 0700 directory${PROBLEM === undefined ? '' : ` — skipped: ${PROBLEM}`}`,
  () => {
    it('runs the tests that need another user there: every one passes, none skipped', async () => {
      base = mkdtempSync(join(tmpdir(), 'cpc-clone-'));
      expect(statSync(base).mode & 0o777).toBe(0o700);
      const clone = join(base, 'checkout');
      const head = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
      execFileSync('git', ['clone', '--quiet', '--no-checkout', ROOT, clone]);
      execFileSync('git', ['-C', clone, 'checkout', '--quiet', '--detach', head]);
      symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
      for (const built of ['dist', 'src/generated']) cpSync(join(ROOT, built), join(clone, built), { recursive: true });

      const report = join(base, 'report.json');
      const run = await runCommand(
        process.execPath,
        [
          join(clone, 'node_modules', 'vitest', 'vitest.mjs'),
          'run',
          '--reporter=json',
          `--outputFile=${report}`,
          ...FILES,
        ],
        { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, cwd: clone },
      );
      const summary = JSON.parse(readFileSync(report, 'utf8')) as {
        numTotalTests: number;
        numPassedTests: number;
        numFailedTests: number;
        numPendingTests: number;
        testResults: { name: string; status: string }[];
      };
      expect(run.code, `${run.stdout}\n${run.stderr}`.slice(-4000)).toBe(0);
      expect(summary.testResults.map((file) => file.name.slice(clone.length + 1)).sort()).toEqual(FILES);
      expect(summary.numFailedTests).toBe(0);
      expect(summary.numPendingTests).toBe(0);
      expect(summary.numPassedTests).toBe(summary.numTotalTests);
      expect(summary.numTotalTests).toBeGreaterThanOrEqual(19);
    }, 180_000);
  },
);
