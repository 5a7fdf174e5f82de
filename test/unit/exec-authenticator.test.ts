import { describe, expect, it } from 'vitest';
import { ExecAuthenticator, ExecCredentialCache, execCacheKey } from '../../src/exec/authenticator.js';
import type { ExecCredential } from '../../src/exec/output.js';
import { execError } from '../../src/exec/errors.js';
import type { ExecCluster, ExecConfig } from '../../src/resolve/types.js';

const exec: ExecConfig = { apiVersion: 'client.authentication.k8s.io/v1', command: 'p', interactiveMode: 'Never' };
const cluster: ExecCluster = { server: 'https://a:6443', config: { clusterName: 'a' } };
const T0 = Date.UTC(2030, 0, 1);

/** A plugin stand-in at the process seam: returns the scripted credentials in turn and counts runs. */
function scripted(...results: (Partial<ExecCredential> | Error)[]) {
  let i = 0;
  const run = async () => {
    const r = results[Math.min(i, results.length - 1)]!;
    i += 1;
    await Promise.resolve();
    if (r instanceof Error) throw r;
    return {
      status: {},
      token: undefined,
      clientCertificate: undefined,
      clientKey: undefined,
      expiresAt: undefined,
      certificateFingerprint: undefined,
      ...r,
    } as ExecCredential;
  };
  return { run, runs: () => i };
}

describe('ExecAuthenticator (frozen clock)', () => {
  it('single flight: 1000 concurrent getCredential → 1 exec, all get the same credential', async () => {
    const p = scripted({ token: 'a' });
    const auth = new ExecAuthenticator(exec, cluster, { run: p.run, now: () => T0 });
    const all = await Promise.all(Array.from({ length: 1000 }, () => auth.getCredential()));
    expect(p.runs()).toBe(1);
    expect(new Set(all).size).toBe(1);
    expect(all[0]!.token).toBe('a');
  });

  it('keeps a credential without expiry until a 401', async () => {
    let now = T0;
    const p = scripted({ token: 'a' }, { token: 'b' });
    const auth = new ExecAuthenticator(exec, cluster, { run: p.run, now: () => now });
    const a = await auth.getCredential();
    now += 365 * 86400_000;
    expect(await auth.getCredential()).toBe(a);
    expect(p.runs()).toBe(1);
  });

  it('refreshes ahead of expirationTimestamp by the margin, capped at half the lifetime', async () => {
    let now = T0;
    const p = scripted(
      { token: 'a', expiresAt: T0 + 600_000 },
      { token: 'b', expiresAt: T0 + 1_200_000 },
      { token: 'c', expiresAt: T0 + 1_150_000 },
    );
    const auth = new ExecAuthenticator(exec, cluster, { run: p.run, now: () => now, refreshMarginMs: 60_000 });
    expect((await auth.getCredential()).token).toBe('a');
    now = T0 + 539_999;
    expect((await auth.getCredential()).token).toBe('a');
    now = T0 + 540_000; // 60 s before expiry
    expect((await auth.getCredential()).token).toBe('b');
    expect(p.runs()).toBe(2);
    // b expires at +1200 s, margin 60 s → refresh at +1140 s; c lives 10 s from there → margin capped at 5 s.
    now = T0 + 1_140_000;
    expect((await auth.getCredential()).token).toBe('c');
    now = T0 + 1_144_999;
    expect((await auth.getCredential()).token).toBe('c');
    expect(p.runs()).toBe(3);
    now = T0 + 1_145_000;
    await auth.getCredential();
    expect(p.runs()).toBe(4);
  });

  it('an already expired credential is handed out once but never cached', async () => {
    const p = scripted({ token: 'old', expiresAt: T0 - 1 }, { token: 'new' });
    const auth = new ExecAuthenticator(exec, cluster, { run: p.run, now: () => T0 });
    expect((await auth.getCredential()).token).toBe('old');
    expect((await auth.getCredential()).token).toBe('new');
  });

  it('never caches a failure: the error reaches every waiter, the next call runs the plugin again', async () => {
    const p = scripted(execError('ERR_EXEC_OUTPUT_INVALID', 'decoding stdout: x'), { token: 'ok' });
    const auth = new ExecAuthenticator(exec, cluster, { run: p.run, now: () => T0 });
    const results = await Promise.allSettled([auth.getCredential(), auth.getCredential()]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason.code).toBe('ERR_EXEC_OUTPUT_INVALID');
    expect(p.runs()).toBe(1);
    expect((await auth.getCredential()).token).toBe('ok');
    expect(p.runs()).toBe(2);
  });

  it('on a 401: re-exec only if the refused credential is still the current one', async () => {
    const p = scripted({ token: 'a' }, { token: 'b' }, { token: 'c' });
    const auth = new ExecAuthenticator(exec, cluster, { run: p.run, now: () => T0 });
    const a = await auth.getCredential();
    auth.onUnauthorized(a);
    const b = await auth.getCredential();
    expect(b.token).toBe('b');
    auth.onUnauthorized(a); // a late 401 of a request made with the old credential
    expect(await auth.getCredential()).toBe(b);
    expect(p.runs()).toBe(2);
  });
});

describe('ExecCredentialCache keys', () => {
  it('keys by everything the plugin sees, never by a user name, independent of key order', () => {
    const withInfo = { ...exec, provideClusterInfo: true };
    expect(execCacheKey(withInfo, cluster)).toBe(
      execCacheKey(
        { provideClusterInfo: true, interactiveMode: 'Never', command: 'p', apiVersion: exec.apiVersion },
        { config: { clusterName: 'a' }, server: 'https://a:6443' },
      ),
    );
    expect(execCacheKey(withInfo, cluster)).not.toBe(
      execCacheKey(withInfo, { ...cluster, config: { clusterName: 'b' } }),
    );
    expect(execCacheKey(exec, cluster)).not.toBe(execCacheKey({ ...exec, args: ['--x'] }, cluster));
    expect(execCacheKey(exec, cluster)).not.toBe(execCacheKey({ ...exec, env: [{ name: 'A', value: '1' }] }, cluster));
    // Without provideClusterInfo the plugin cannot tell clusters apart: one credential, as in client-go.
    expect(execCacheKey(exec, cluster)).toBe(execCacheKey(exec, { server: 'https://b:6443' }));
  });

  it('hands out one authenticator per key', () => {
    const cache = new ExecCredentialCache({ now: () => T0 });
    const withInfo = { ...exec, provideClusterInfo: true };
    expect(cache.authenticatorFor(withInfo, cluster)).toBe(cache.authenticatorFor({ ...withInfo }, { ...cluster }));
    expect(cache.authenticatorFor(withInfo, cluster)).not.toBe(
      cache.authenticatorFor(withInfo, { server: 'https://b:6443' }),
    );
    expect(cache.size).toBe(2);
    expect(cache.forget({ ...withInfo }, { ...cluster })).toBe(true);
    expect(cache.forget(withInfo, cluster)).toBe(false);
    expect(cache.size).toBe(1);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
