/**
 * The issuer's background loops (src/issuer/background.ts): every failure counted, logged without flooding, and
 * readiness failing once a loop has failed without a success for longer than its allowance (three periods, at least
 * a minute) — with the loop, the time and the last error in the reason.
 */
import { describe, expect, it } from 'vitest';
import { ALLOWED_PERIODS, BackgroundLoops, MIN_ALLOWANCE_MS } from '../../src/issuer/background.js';

function loops() {
  let now = Date.UTC(2030, 0, 1);
  const lines: string[] = [];
  const counted: string[] = [];
  const background = new BackgroundLoops({
    log: (line) => lines.push(line),
    counted: (loop) => counted.push(loop),
    now: () => now,
  });
  return {
    background,
    lines,
    counted,
    advance(ms: number) {
      now += ms;
    },
  };
}

/** The readiness checks' outcomes by name: 'ok' or the message they failed with. */
async function readiness(background: BackgroundLoops): Promise<Record<string, string>> {
  const outcomes: Record<string, string> = {};
  for (const check of background.readinessChecks()) {
    outcomes[check.name] = await check.check(new AbortController().signal).then(
      () => 'ok',
      (error: Error & { code?: string }) => `${error.code}: ${error.message}`,
    );
  }
  return outcomes;
}

describe('BackgroundLoops', () => {
  it('fails readiness once a loop has failed for longer than three periods, and recovers with one success', async () => {
    const t = loops();
    const period = 45_000;
    const report = t.background.register('nonce-collection', period);
    expect(await readiness(t.background)).toEqual({ 'background:nonce-collection': 'ok' });
    const forbidden = new Error('configmaps "issuer-nonce-x" is forbidden: cannot delete (403)');
    for (let run = 0; run < ALLOWED_PERIODS; run++) {
      report.failed(forbidden);
      t.advance(period);
    }
    // Exactly the allowance: still ready.
    expect(await readiness(t.background)).toEqual({ 'background:nonce-collection': 'ok' });
    t.advance(1);
    report.failed(forbidden);
    const outcome = (await readiness(t.background))['background:nonce-collection'];
    expect(outcome).toMatch(
      /^ERR_ISSUER_NOT_READY: background nonce-collection has failed for 135 s \(4 runs in a row, more than the 135 s allowed\): configmaps .* forbidden/,
    );
    expect(t.counted).toEqual(Array(4).fill('nonce-collection'));
    // The same error again is counted but logged once (and every tenth time in a row).
    expect(t.lines).toEqual([`background nonce-collection failed (1 in a row): ${forbidden.message}`]);
    report.succeeded();
    expect(await readiness(t.background)).toEqual({ 'background:nonce-collection': 'ok' });
    expect(t.lines.at(-1)).toBe('background nonce-collection works again after 4 failures');
  });

  it('gives a fast loop at least a minute; a loop without readiness is counted only', async () => {
    const t = loops();
    const reconciler = t.background.register('tenant-reconciler', 1000);
    const reload = t.background.register('serving-reload', 5000, { log: false, readiness: false });
    reconciler.failed(new Error('watch failed'));
    reload.failed(new Error('bad pair'));
    t.advance(MIN_ALLOWANCE_MS);
    expect(await readiness(t.background)).toEqual({ 'background:tenant-reconciler': 'ok' });
    t.advance(1);
    reconciler.failed(new Error('list failed'));
    expect((await readiness(t.background))['background:tenant-reconciler']).toMatch(
      /^ERR_ISSUER_NOT_READY: background tenant-reconciler has failed for 60 s .*: list failed$/,
    );
    expect(t.counted).toEqual(['tenant-reconciler', 'serving-reload', 'tenant-reconciler']);
    // A new message is logged; the loop that logs itself is not.
    expect(t.lines).toEqual([
      'background tenant-reconciler failed (1 in a row): watch failed',
      'background tenant-reconciler failed (2 in a row): list failed',
    ]);
  });
});
