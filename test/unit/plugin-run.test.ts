import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CredentialsError, type ErrorCode } from '../../src/base/errors.js';
import { runPlugin, type CredentialProvider, type IssueContext, type ProcessIo } from '../../src/plugin/index.js';

const V1 = 'client.authentication.k8s.io/v1';
let clock = new Date('2030-01-01T00:00:00Z');
const now = () => clock;

function memoryIo(isTTY = false): ProcessIo & { out(): string; err(): string } {
  const stdin = Object.assign(new PassThrough(), { isTTY });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return { stdin, stdout, stderr, out: () => out, err: () => err };
}

const flags = { subject: { type: 'string', required: true, description: 'who' } } as const;

function provider(issue: (context: IssueContext<{ n: number }>) => Promise<unknown>) {
  const contexts: IssueContext<{ n: number }>[] = [];
  const p: CredentialProvider<typeof flags, { subject: string }, { n: number }> = {
    name: 'unit',
    description: 'unit provider',
    flags,
    minRemainingSeconds: 300,
    settings: ({ flags }) => ({ subject: flags.subject }),
    cacheKey: (settings) => settings,
    async issue(_settings, context) {
      contexts.push(context);
      return (await issue(context)) as never;
    },
  };
  return { p, contexts };
}

const info = (interactive: boolean) =>
  JSON.stringify({ kind: 'ExecCredential', apiVersion: V1, spec: { interactive } });
const expiringIn = (seconds: number) => new Date(clock.getTime() + seconds * 1000).toISOString();

describe('runPlugin', () => {
  it('serves from the cache until minRemainingSeconds before expiry, then renews with the previous state', async () => {
    clock = new Date('2030-01-01T00:00:00Z');
    let n = 0;
    const { p, contexts } = provider(async (context) => ({
      status: { token: `t${++n}`, expirationTimestamp: expiringIn(3600) },
      state: { n: (context.previous?.state?.n ?? 0) + 1 },
    }));
    const run = runPlugin(p, { now });
    const cache = mkdtempSync(join(tmpdir(), 'cpc-run-unit-'));
    const argv = ['--subject', 's', '--cache-dir', cache];
    const tokens: string[] = [];
    for (const minutes of [0, 50, 56]) {
      clock = new Date(Date.UTC(2030, 0, 1, 0, minutes));
      const io = memoryIo();
      expect(await run(argv, { KUBERNETES_EXEC_INFO: info(false) }, io)).toBe(0);
      tokens.push(JSON.parse(io.out()).status.token);
    }
    // 00:50 is 10 min before expiry (served); 00:56 is 4 min before, inside the 5 min margin (renewed).
    expect(tokens).toEqual(['t1', 't1', 't2']);
    expect(contexts[1]?.previous).toEqual({
      status: { token: 't1', expirationTimestamp: '2030-01-01T01:00:00.000Z' },
      issuedAt: '2030-01-01T00:00:00.000Z',
      state: { n: 1 },
    });
  });

  it('exposes interactive from the input and hands over stdin only then', async () => {
    clock = new Date('2030-01-01T00:00:00Z');
    const { p, contexts } = provider(async () => ({ status: { token: 't' } }));
    const run = runPlugin(p, { now });
    const cache = mkdtempSync(join(tmpdir(), 'cpc-run-unit-'));
    const quiet = memoryIo(true);
    await run(['--subject', 's', '--cache-dir', cache], { KUBERNETES_EXEC_INFO: info(false) }, quiet);
    const loud = memoryIo(true);
    await run(['--subject', 's', '--cache-dir', cache], { KUBERNETES_EXEC_INFO: info(true) }, loud);
    expect(contexts.map((context) => context.interactive)).toEqual([false, true]);
    expect(contexts[0]?.stdin).not.toBe(quiet.stdin);
    expect(contexts[1]?.stdin).toBe(loud.stdin);
    // No expirationTimestamp: printed but never cached.
    expect(readdirSync(cache)).toEqual([]);
  });

  it('a provider bug: exit 1, one line without a stack unless CLUSTERPROFILE_DEBUG is set', async () => {
    const { p } = provider(async () => {
      throw new TypeError('cannot read properties of undefined');
    });
    const run = runPlugin(p, { now });
    const cache = mkdtempSync(join(tmpdir(), 'cpc-run-unit-'));
    const io = memoryIo();
    expect(await run(['--subject', 's', '--cache-dir', cache], {}, io)).toBe(1);
    expect(io.out()).toBe('');
    expect(io.err()).toBe(
      'clusterprofile-unit: internal error: cannot read properties of undefined (set CLUSTERPROFILE_DEBUG=1 for a stack trace)\n',
    );
    const debug = memoryIo();
    await run(['--subject', 's', '--cache-dir', cache], { CLUSTERPROFILE_DEBUG: '1' }, debug);
    expect(debug.err()).toMatch(/internal error: TypeError: cannot read properties of undefined\n\s+at /);
  });

  it('a CredentialsError from issue: exit 1 with code, path and hint; from settings: exit 2', async () => {
    const { p } = provider(async () => {
      throw new CredentialsError('ERR_X_DENIED' as ErrorCode, 'denied', {
        path: 'https://i/token',
        hint: 'ask an admin',
      });
    });
    const run = runPlugin(p, { now });
    const cache = mkdtempSync(join(tmpdir(), 'cpc-run-unit-'));
    const io = memoryIo();
    expect(await run(['--subject', 's', '--cache-dir', cache], {}, io)).toBe(1);
    expect(io.err()).toBe('clusterprofile-unit: ERR_X_DENIED: denied (at https://i/token)\nhint: ask an admin\n');
    const bad = runPlugin(
      {
        ...p,
        settings: () => {
          throw new CredentialsError('ERR_X_CONFIG' as ErrorCode, 'no issuer', {
            path: '$.spec.cluster.config.issuerURL',
          });
        },
      },
      { now },
    );
    const io2 = memoryIo();
    expect(await bad(['--subject', 's', '--cache-dir', cache], {}, io2)).toBe(2);
    expect(io2.out()).toBe('');
  });

  it('in-process with a host that handles SIGTERM: the signal aborts issue and releases the lock, the host lives on', async () => {
    const { p } = provider(
      (context) =>
        new Promise((_resolve, reject) => {
          context.signal.addEventListener('abort', () => reject(context.signal.reason));
          setImmediate(() => process.emit('SIGTERM', 'SIGTERM'));
        }),
    );
    const hostHandler = (): void => {};
    process.on('SIGTERM', hostHandler);
    try {
      const cache = mkdtempSync(join(tmpdir(), 'cpc-run-unit-'));
      const io = memoryIo();
      expect(await runPlugin(p, { now })(['--subject', 's', '--cache-dir', cache], {}, io)).toBe(1);
      expect(io.out()).toBe('');
      expect(io.err()).toBe('clusterprofile-unit: ERR_PLUGIN_INTERRUPTED: interrupted by SIGTERM\n');
      expect(readdirSync(cache)).toEqual([]);
      expect(process.listeners('SIGTERM')).toEqual([hostHandler]);
    } finally {
      process.off('SIGTERM', hostHandler);
    }
  });

  it('--help prints the usage on stdout with exit 0', async () => {
    const { p } = provider(async () => ({}));
    const io = memoryIo();
    expect(await runPlugin(p)(['--help'], {}, io)).toBe(0);
    expect(io.out()).toContain('usage: clusterprofile-unit [flags]');
  });
});
