// The one retry loop (src/base/retry.ts) on a fake clock that sleeping advances: backoff, attempts, the deadline.
import { describe, expect, it } from 'vitest';
import { withRetries } from '../../src/base/retry.js';

function clock(start = 0) {
  let now = start;
  const sleeps: number[] = [];
  return {
    now: () => now,
    sleeps,
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
    advance: (ms: number) => {
      now += ms;
    },
  };
}

class Transient extends Error {}

describe('withRetries', () => {
  it('doubles the backoff up to the cap, without jitter unless asked', async () => {
    const c = clock();
    let calls = 0;
    const result = await withRetries(
      async () => {
        calls += 1;
        if (calls < 5) throw new Transient('down');
        return 'up';
      },
      {
        attempts: 10,
        baseDelayMs: 200,
        maxDelayMs: 1_000,
        now: c.now,
        sleep: c.sleep,
        retryable: (e) => e instanceof Transient,
      },
    );
    expect(result).toBe('up');
    expect(c.sleeps).toEqual([200, 400, 800, 1_000]);
  });

  it('jitters within [50 %, 100 %] of the backoff', async () => {
    const c = clock();
    await withRetries(
      async (_left, number) => {
        if (number < 3) throw new Transient('down');
      },
      { attempts: 3, baseDelayMs: 100, jitter: () => 0, now: c.now, sleep: c.sleep, retryable: () => true },
    );
    expect(c.sleeps).toEqual([50, 100]);
  });

  it('throws a non-retryable error at once, and gives the last retryable one to giveUp when attempts run out', async () => {
    const c = clock();
    await expect(
      withRetries(async () => Promise.reject(new Error('refused')), {
        attempts: 5,
        baseDelayMs: 10,
        now: c.now,
        sleep: c.sleep,
        retryable: (e) => e instanceof Transient,
      }),
    ).rejects.toThrow('refused');
    expect(c.sleeps).toEqual([]);
    let attempts = 0;
    await expect(
      withRetries(async () => Promise.reject(new Transient('down')), {
        attempts: 3,
        baseDelayMs: 10,
        now: c.now,
        sleep: c.sleep,
        retryable: () => true,
        giveUp: (error, count) => {
          attempts = count;
          return new Error(`${(error as Error).message} after ${count}`);
        },
      }),
    ).rejects.toThrow('down after 3');
    expect(attempts).toBe(3);
  });

  it('retries a result the caller names, and returns the last one when attempts run out', async () => {
    const c = clock();
    const statuses = [503, 503, 503];
    const seen: number[] = [];
    const result = await withRetries(async () => statuses.shift()!, {
      attempts: 3,
      baseDelayMs: 10,
      now: c.now,
      sleep: c.sleep,
      retryable: () => false,
      retryResult: (status) => status >= 500,
      onRetry: (failure) => seen.push('result' in failure ? failure.result : -1),
    });
    expect(result).toBe(503);
    expect(seen).toEqual([503, 503]);
  });

  it('never sleeps past the deadline, and hands each attempt the time left', async () => {
    const c = clock();
    const left: number[] = [];
    await expect(
      withRetries(
        async (remaining) => {
          left.push(remaining);
          c.advance(Math.min(300, remaining));
          throw new Transient('slow');
        },
        { attempts: 100, baseDelayMs: 100, deadline: 2_000, now: c.now, sleep: c.sleep, retryable: () => true },
      ),
    ).rejects.toThrow('slow');
    // 300 + 100, 300 + 200, 300 + 400: 1 300 ms used; 300 more leave 400, not enough for the 800 ms backoff.
    expect(left).toEqual([2_000, 1_600, 1_100, 400]);
    expect(c.sleeps).toEqual([100, 200, 400]);
    expect(c.now()).toBeLessThanOrEqual(2_000);
  });

  it('does not start an attempt without time left, and stops once the signal aborts', async () => {
    const c = clock(5_000);
    await expect(
      withRetries(async () => 'never', {
        attempts: 3,
        baseDelayMs: 10,
        deadline: 5_000,
        now: c.now,
        retryable: () => true,
        expired: () => new Error('no time'),
      }),
    ).rejects.toThrow('no time');
    const controller = new AbortController();
    let calls = 0;
    await expect(
      withRetries(
        async () => {
          calls += 1;
          controller.abort();
          throw new Transient('down');
        },
        { attempts: 5, baseDelayMs: 10, now: c.now, sleep: c.sleep, signal: controller.signal, retryable: () => true },
      ),
    ).rejects.toThrow('down');
    expect(calls).toBe(1);
  });
});
