import { getEventListeners } from 'node:events';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CredentialsError, type ErrorCode } from '../../src/base/errors.js';
import {
  cacheKey,
  obtainCredential,
  type CredentialProvider,
  type ExecCredentialInput,
  type IssueContext,
} from '../../src/plugin/index.js';

const V1 = 'client.authentication.k8s.io/v1';
const START = new Date('2030-01-01T00:00:00Z');
const input = (interactive = false): ExecCredentialInput => ({
  apiVersion: V1,
  kind: 'ExecCredential',
  spec: { interactive, cluster: { server: 'https://member:6443' } },
});

const flags = {
  subject: { type: 'string', required: true, description: 'who' },
  scope: { type: 'string', multiple: true, description: 'scopes' },
  verbose: { type: 'boolean', description: 'talk' },
} as const;

type Settings = { subject: string; scopes: readonly string[]; server: string | undefined };

/** A provider that issues `<subject>-<n>` tokens valid for an hour and records what it was given. */
function provider(overrides: Partial<CredentialProvider<typeof flags, Settings, { n: number }>> = {}) {
  const issued: IssueContext<{ n: number }>[] = [];
  const p: CredentialProvider<typeof flags, Settings, { n: number }> = {
    name: 'obtain-unit',
    description: 'unit provider',
    flags,
    minRemainingSeconds: 300,
    settings: ({ flags, input }) => ({
      subject: flags.subject,
      scopes: flags.scope,
      server: input.spec.cluster?.server,
    }),
    cacheKey: (settings) => settings,
    async issue(settings, context) {
      issued.push(context);
      const n = (context.previous?.state?.n ?? 0) + 1;
      return {
        status: {
          token: `${settings.subject}-${n}`,
          expirationTimestamp: new Date(context.now().getTime() + 3_600_000).toISOString(),
        },
        state: { n },
      };
    },
    ...overrides,
  };
  return { p, issued };
}

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'cpc-obtain-'));
const timers = (): number => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
const processSignalListeners = (): number[] =>
  (['SIGINT', 'SIGTERM', 'SIGHUP'] as const).map((name) => process.listenerCount(name));

describe('obtainCredential', () => {
  it('issues on a miss, serves the entry on the next call, renews inside the margin with the previous state', async () => {
    const { p, issued } = provider();
    const cacheDir = tempDir();
    let clock = START;
    const call = () =>
      obtainCredential(p, {
        input: input(),
        flags: { subject: 'alice' },
        env: {},
        now: () => clock,
        signal: new AbortController().signal,
        cacheDir,
      });
    expect(await call()).toEqual({
      status: { token: 'alice-1', expirationTimestamp: '2030-01-01T01:00:00.000Z' },
      fromCache: false,
    });
    clock = new Date('2030-01-01T00:54:00Z'); // 6 min left: served
    expect(await call()).toEqual({
      status: { token: 'alice-1', expirationTimestamp: '2030-01-01T01:00:00.000Z' },
      fromCache: true,
    });
    clock = new Date('2030-01-01T00:56:00Z'); // 4 min left, inside the 5 min margin: renewed
    expect((await call()).status.token).toBe('alice-2');
    expect(issued[1]?.previous).toEqual({
      status: { token: 'alice-1', expirationTimestamp: '2030-01-01T01:00:00.000Z' },
      issuedAt: START.toISOString(),
      state: { n: 1 },
    });
  });

  it('typed flags and argv flags are the same credential (one cache entry); argv may carry --cache-dir and --force-refresh', async () => {
    const { p, issued } = provider();
    const cacheDir = tempDir();
    const base = { input: input(), env: {}, now: () => START, signal: new AbortController().signal };
    const typed = await obtainCredential(p, {
      ...base,
      flags: { subject: 'bob', scope: ['a', 'b'], verbose: false },
      cacheDir,
    });
    const argv = await obtainCredential(p, {
      ...base,
      flags: ['--subject', 'bob', '--scope', 'a', '--scope', 'b', '--cache-dir', cacheDir],
    });
    expect(argv).toEqual({ ...typed, fromCache: true });
    expect(readdirSync(cacheDir).filter((name) => name.endsWith('.json'))).toEqual([
      `${cacheKey('obtain-unit', { subject: 'bob', scopes: ['a', 'b'], server: 'https://member:6443' })}.json`,
    ]);
    const forced = await obtainCredential(p, {
      ...base,
      flags: ['--subject', 'bob', '--scope', 'a', '--scope', 'b', '--cache-dir', cacheDir, '--force-refresh'],
    });
    expect(forced).toEqual({
      status: { token: 'bob-2', expirationTimestamp: '2030-01-01T01:00:00.000Z' },
      fromCache: false,
    });
    expect(issued).toHaveLength(2);
  });

  it('reads nothing from the process: the cache directory comes from the given env, the time from the given clock', async () => {
    const { p } = provider();
    const kubeCacheDir = tempDir();
    expect(process.env['KUBECACHEDIR']).toBeUndefined();
    await obtainCredential(p, {
      input: input(),
      flags: { subject: 'carol' },
      env: { KUBECACHEDIR: kubeCacheDir },
      now: () => START,
      signal: new AbortController().signal,
    });
    const dir = join(kubeCacheDir, 'clusterprofile', 'obtain-unit');
    expect(readdirSync(dir).filter((name) => name.endsWith('.json'))).toHaveLength(1);
    // The entry was stamped with the given clock, not the machine's.
    const again = await obtainCredential(p, {
      input: input(),
      flags: { subject: 'carol' },
      env: { KUBECACHEDIR: kubeCacheDir },
      now: () => START,
      signal: new AbortController().signal,
    });
    expect(again).toEqual({
      status: { token: 'carol-1', expirationTimestamp: '2030-01-01T01:00:00.000Z' },
      fromCache: true,
    });
  });

  it('hands stdin over only for an interactive input, and stderr to the provider', async () => {
    const { p, issued } = provider();
    const cacheDir = tempDir();
    const stdin = new PassThrough();
    const stderr = new PassThrough();
    const base = {
      env: {},
      now: () => START,
      signal: new AbortController().signal,
      cacheDir,
      stdin,
      stderr,
      forceRefresh: true,
    };
    await obtainCredential(p, { ...base, input: input(false), flags: { subject: 'dan' } });
    await obtainCredential(p, { ...base, input: input(true), flags: { subject: 'dan' } });
    expect(issued.map((context) => [context.interactive, context.stdin === stdin, context.stderr === stderr])).toEqual([
      [false, false, true],
      [true, true, true],
    ]);
  });

  it('bad flags are ERR_PLUGIN_USAGE naming the flag, before the provider runs', async () => {
    const { p, issued } = provider();
    const base = {
      input: input(),
      env: {},
      now: () => START,
      signal: new AbortController().signal,
      cacheDir: tempDir(),
    };
    const refusal = async (flagValues: unknown) =>
      obtainCredential(p, { ...base, flags: flagValues as never }).then(
        () => undefined,
        (error: CredentialsError) => [error.code, error.path],
      );
    expect(await refusal({})).toEqual(['ERR_PLUGIN_USAGE', '--subject']);
    expect(await refusal({ subject: 'x', colour: 'red' })).toEqual(['ERR_PLUGIN_USAGE', '--colour']);
    expect(await refusal({ subject: 'x', verbose: 'yes' })).toEqual(['ERR_PLUGIN_USAGE', '--verbose']);
    expect(await refusal({ subject: 'x', scope: 'a' })).toEqual(['ERR_PLUGIN_USAGE', '--scope']);
    expect(await refusal(['--subject', 'x', '--colour', 'red'])).toEqual(['ERR_PLUGIN_USAGE', '--colour']);
    expect(await refusal(['clean', '--subject', 'x'])).toEqual(['ERR_PLUGIN_USAGE', 'clean']);
    expect(await refusal(['--help'])).toEqual(['ERR_PLUGIN_USAGE', '--help']);
    expect(issued).toHaveLength(0);
  });

  it('a failed issue writes nothing; a credential without expiry is returned but not cached', async () => {
    const cacheDir = tempDir();
    const base = {
      input: input(),
      flags: { subject: 'eve' },
      env: {},
      now: () => START,
      signal: new AbortController().signal,
      cacheDir,
    };
    const failing = provider({
      async issue() {
        throw new CredentialsError('ERR_X_DENIED' as ErrorCode, 'denied');
      },
    });
    await expect(obtainCredential(failing.p, base)).rejects.toMatchObject({ code: 'ERR_X_DENIED' });
    expect(readdirSync(cacheDir)).toEqual([]);
    const unbounded = provider({ issue: async () => ({ status: { token: 'forever' } }) });
    expect(await obtainCredential(unbounded.p, base)).toEqual({ status: { token: 'forever' }, fromCache: false });
    expect(readdirSync(cacheDir)).toEqual([]);
    const unusable = provider({ issue: async () => ({ status: { clientCertificateData: 'only half' } }) });
    await expect(obtainCredential(unusable.p, base)).rejects.toMatchObject({ code: 'ERR_PLUGIN_BAD_CREDENTIAL' });
  });

  it("waits for a held lock as long as the provider's lockTimeoutMs says, unless the call says otherwise; the signal ends the wait", async () => {
    const cacheDir = tempDir();
    const { p } = provider({ lockTimeoutMs: 300 });
    const key = cacheKey('obtain-unit', { subject: 'frank', scopes: [], server: 'https://member:6443' });
    // A lock of another live process (our parent) on this host: never stale. (A lock naming our own pid that this
    // process does not hold is taken over: a restarted container is pid 1 again.)
    writeFileSync(
      join(cacheDir, `${key}.lock`),
      JSON.stringify({ pid: process.ppid, host: hostname(), createdAt: Date.now(), token: 'held' }),
      { mode: 0o600 },
    );
    const base = { input: input(), flags: { subject: 'frank' }, env: {}, now: () => new Date(), cacheDir };

    let started = performance.now();
    await expect(obtainCredential(p, { ...base, signal: new AbortController().signal })).rejects.toMatchObject({
      code: 'ERR_PLUGIN_CACHE_LOCKED',
    });
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(performance.now() - started).toBeLessThan(2000);

    started = performance.now();
    await expect(
      obtainCredential(p, { ...base, signal: new AbortController().signal, lockTimeoutMs: 50 }),
    ).rejects.toMatchObject({
      message: expect.stringContaining('timed out after 50 ms'),
    });

    const controller = new AbortController();
    const reason = new CredentialsError('ERR_HOST_SHUTDOWN' as ErrorCode, 'shutting down');
    setTimeout(() => controller.abort(reason), 100);
    await expect(obtainCredential(p, { ...base, signal: controller.signal, lockTimeoutMs: 60_000 })).rejects.toBe(
      reason,
    );
    await expect(obtainCredential(p, { ...base, signal: controller.signal })).rejects.toBe(reason); // already aborted
  });

  it('concurrent calls for one cluster in one process issue once; the others get the cached credential', async () => {
    const { p, issued } = provider({
      async issue(settings, context) {
        issued.push(context);
        await new Promise((resolve) => setTimeout(resolve, 50));
        return {
          status: {
            token: `${settings.subject}-once`,
            expirationTimestamp: new Date(context.now().getTime() + 3_600_000).toISOString(),
          },
        };
      },
    });
    const signal = new AbortController().signal;
    const cacheDir = tempDir();
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        obtainCredential(p, {
          input: input(),
          flags: { subject: 'gina' },
          env: {},
          now: () => START,
          signal,
          cacheDir,
        }),
      ),
    );
    expect(issued).toHaveLength(1);
    expect(new Set(results.map((result) => result.status.token))).toEqual(new Set(['gina-once']));
    expect(results.filter((result) => !result.fromCache)).toHaveLength(1);
  });

  it('leaks nothing per call: 2000 cache hits and 200 misses on one shared signal leave no listener, no timer, no signal handler', async () => {
    const { p, issued } = provider();
    const shared = new AbortController();
    const cacheDir = tempDir();
    const stderr = new PassThrough();
    const call = (subject: string) =>
      obtainCredential(p, {
        input: input(),
        flags: { subject },
        env: {},
        now: () => START,
        signal: shared.signal,
        cacheDir,
        stderr,
      });
    // Timers still running when this test starts (the test runner's start-up timer, an earlier test's lock poll) end
    // during the calls below: counted before, they would be missed after.
    for (let waited = 0; waited < 3_000 && timers() > 0; waited += 50)
      await new Promise((resolve) => setTimeout(resolve, 50));
    const before = {
      listeners: getEventListeners(shared.signal, 'abort').length,
      timers: timers(),
      handlers: processSignalListeners(),
    };

    const clusters = Array.from({ length: 200 }, (_, index) => `cluster-${index}`);
    for (const subject of clusters)
      expect(await call(subject)).toMatchObject({ status: { token: `${subject}-1` }, fromCache: false });
    for (let round = 0; round < 10; round += 1) {
      const results = await Promise.all(clusters.map(call));
      expect(results.every((result, index) => result.fromCache && result.status.token === `${clusters[index]}-1`)).toBe(
        true,
      );
    }

    expect(issued).toHaveLength(200);
    expect(readdirSync(cacheDir).filter((name) => name.endsWith('.json'))).toHaveLength(200);
    expect(readdirSync(cacheDir).filter((name) => name.endsWith('.lock'))).toEqual([]);
    expect({
      listeners: getEventListeners(shared.signal, 'abort').length,
      timers: timers(),
      handlers: processSignalListeners(),
    }).toEqual(before);
    expect(before.listeners).toBe(0);
  });
});
