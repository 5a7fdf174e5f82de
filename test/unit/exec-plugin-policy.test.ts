// The credential plugin policy (client-go 1.35 PluginPolicy / kuberc credentialPluginPolicy): its validation texts,
// Go's path cleaning, and the allowlist's matching of names and paths against real files in a temporary PATH.
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExecAuthenticator, ExecCredentialCache } from '../../src/exec/authenticator.js';
import {
  checkPluginPolicy,
  cleanPath,
  validatePluginPolicy,
  type CredentialPluginPolicy,
} from '../../src/exec/policy.js';

function refusal(action: () => unknown): { code: string; message: string } {
  try {
    action();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected a refusal');
}

describe('validatePluginPolicy: client-go ValidatePluginPolicy', () => {
  it.each<[CredentialPluginPolicy, string]>([
    [
      { policyType: 'AllowAll', allowlist: [] },
      'invalid plugin policy: misconfigured credential plugin allowlist: plugin policy is "AllowAll" but allowlist is non-nil',
    ],
    [
      { policyType: '', allowlist: [{ name: 'x' }] },
      'invalid plugin policy: misconfigured credential plugin allowlist: plugin policy is "" but allowlist is non-nil',
    ],
    [
      { policyType: 'DenyAll', allowlist: [] },
      'invalid plugin policy: misconfigured credential plugin allowlist: plugin policy is "DenyAll" but allowlist is non-nil',
    ],
    [
      { policyType: 'Allowlist' },
      'invalid plugin policy: credential plugin policy set to "Allowlist", but allowlist is unspecified',
    ],
    [
      { policyType: 'Allowlist', allowlist: [] },
      'invalid plugin policy: credential plugin policy set to "Allowlist", but allowlist is empty; use "DenyAll" policy instead',
    ],
    [
      { policyType: 'Allowlist', allowlist: [{ name: 'a' }, { name: '' }] },
      'invalid plugin policy: misconfigured credential plugin allowlist: empty allowlist entry #2',
    ],
    [
      { policyType: 'Allowlist', allowlist: [{ name: './plugin' }] },
      'invalid plugin policy: non-normalized file path: "./plugin" vs "plugin"',
    ],
    [
      { policyType: 'Allowlist', allowlist: [{ name: '/usr/bin/' }] },
      'invalid plugin policy: non-normalized file path: "/usr/bin/" vs "/usr/bin"',
    ],
    [{ policyType: 'Denylist' as never }, 'invalid plugin policy: unknown plugin policy: "Denylist"'],
  ])('%j is refused', (policy, message) => {
    const error = refusal(() => validatePluginPolicy(policy));
    expect(error.code).toBe('ERR_EXEC_PLUGIN_POLICY_INVALID');
    expect(error.message).toBe(message);
    // As client-go's GetAuthenticator: the authenticator (and the cache) refuse it when built.
    expect(refusal(() => new ExecCredentialCache({ pluginPolicy: policy })).code).toBe(
      'ERR_EXEC_PLUGIN_POLICY_INVALID',
    );
    expect(
      refusal(
        () =>
          new ExecAuthenticator(
            { apiVersion: 'client.authentication.k8s.io/v1', command: 'x', interactiveMode: 'Never' },
            undefined,
            { pluginPolicy: policy },
          ),
      ).code,
    ).toBe('ERR_EXEC_PLUGIN_POLICY_INVALID');
  });

  it('accepts the valid shapes', () => {
    for (const policy of [
      undefined,
      { policyType: '' },
      { policyType: 'AllowAll' },
      { policyType: 'DenyAll' },
      { policyType: 'Allowlist', allowlist: [{ name: 'a' }, { name: '/usr/local/bin/b' }] },
    ] as const) {
      expect(() => validatePluginPolicy(policy as CredentialPluginPolicy | undefined)).not.toThrow();
    }
  });

  it('cleans paths like Go filepath.Clean', () => {
    expect(['', '.', 'a/', './a', 'a//b', '/a/../b', '//a', '../a/', '/'].map(cleanPath)).toEqual([
      '.',
      '.',
      'a',
      'a',
      'a/b',
      '/b',
      '/a',
      '../a',
      '/',
    ]);
  });
});

describe('checkPluginPolicy: which command runs', () => {
  let bin: string;
  let other: string;
  let env: { PATH: string };

  beforeAll(() => {
    const root = mkdtempSync(join(tmpdir(), 'cpc-policy-'));
    bin = join(root, 'bin');
    other = join(root, 'other');
    for (const dir of [bin, other]) {
      mkdirSync(dir);
      writeFileSync(join(dir, 'my-plugin'), '#!/bin/sh\nexit 0\n');
      chmodSync(join(dir, 'my-plugin'), 0o755);
    }
    writeFileSync(join(bin, 'not-executable'), '');
    env = { PATH: `${bin}:/nonexistent` };
  });

  const allow = (...names: string[]): CredentialPluginPolicy => ({
    policyType: 'Allowlist',
    allowlist: names.map((name) => ({ name })),
  });

  it('AllowAll and an empty policy run the command as configured', () => {
    expect(checkPluginPolicy(undefined, 'my-plugin', env)).toBe('my-plugin');
    expect(checkPluginPolicy({ policyType: '' }, 'my-plugin', env)).toBe('my-plugin');
    expect(checkPluginPolicy({ policyType: 'AllowAll' }, 'anything', env)).toBe('anything');
  });

  it('DenyAll refuses every plugin with client-go’s text (the command cleaned)', () => {
    const error = refusal(() => checkPluginPolicy({ policyType: 'DenyAll' }, './my-plugin', env));
    expect(error.code).toBe('ERR_EXEC_PLUGIN_DENIED');
    expect(error.message).toBe('plugin "my-plugin" not allowed: policy set to "DenyAll"');
  });

  it('an entry names a plugin by name: the command by name or by the path it resolves to', () => {
    expect(checkPluginPolicy(allow('my-plugin'), 'my-plugin', env)).toBe(join(bin, 'my-plugin'));
    expect(checkPluginPolicy(allow('my-plugin'), join(bin, 'my-plugin'), env)).toBe(join(bin, 'my-plugin'));
  });

  it('an entry names a plugin by path: the command by that path or by a name resolving to it', () => {
    expect(checkPluginPolicy(allow(join(bin, 'my-plugin')), join(bin, 'my-plugin'), env)).toBe(join(bin, 'my-plugin'));
    expect(checkPluginPolicy(allow(join(bin, 'my-plugin')), 'my-plugin', env)).toBe(join(bin, 'my-plugin'));
  });

  it('the same base name elsewhere is not the plugin', () => {
    const byPath = refusal(() => checkPluginPolicy(allow(join(other, 'my-plugin')), 'my-plugin', env));
    expect(byPath.code).toBe('ERR_EXEC_PLUGIN_DENIED');
    expect(byPath.message).toBe(
      `plugin path ${JSON.stringify(join(bin, 'my-plugin'))} is not permitted by the credential plugin allowlist`,
    );
    // A name resolves in the parent's PATH: `my-plugin` is bin/my-plugin, not other/my-plugin.
    expect(refusal(() => checkPluginPolicy(allow('my-plugin'), join(other, 'my-plugin'), env)).code).toBe(
      'ERR_EXEC_PLUGIN_DENIED',
    );
    expect(refusal(() => checkPluginPolicy(allow('other-plugin'), 'my-plugin', env)).code).toBe(
      'ERR_EXEC_PLUGIN_DENIED',
    );
  });

  it('a command that cannot be resolved is refused with the lookup’s reason', () => {
    const missing = refusal(() => checkPluginPolicy(allow('my-plugin'), 'missing-plugin', env));
    expect(missing.code).toBe('ERR_EXEC_PLUGIN_DENIED');
    expect(missing.message).toBe(
      'plugin path "missing-plugin" cannot be resolved for credential plugin allowlist check: exec: "missing-plugin": executable file not found in $PATH',
    );
    const notExecutable = refusal(() => checkPluginPolicy(allow('my-plugin'), join(bin, 'not-executable'), env));
    expect(notExecutable.message).toBe(
      `plugin path ${JSON.stringify(join(bin, 'not-executable'))} cannot be resolved for credential plugin allowlist check: exec: ${JSON.stringify(join(bin, 'not-executable'))}: permission denied`,
    );
  });

  it('a command the allowlist names verbatim but that does not exist fails as a missing plugin', () => {
    const error = refusal(() => checkPluginPolicy(allow('missing-plugin'), 'missing-plugin', env, 'install it'));
    expect(error.code).toBe('ERR_EXEC_NOT_FOUND');
    expect(error.message).toBe('exec: executable missing-plugin not found\n\ninstall it');
  });

  it('a name found through a relative PATH entry is not resolved (Go ErrDot)', () => {
    const relativeBin = relative(process.cwd(), bin);
    const error = refusal(() => checkPluginPolicy(allow(join(bin, 'my-plugin')), 'my-plugin', { PATH: relativeBin }));
    expect(error.code).toBe('ERR_EXEC_PLUGIN_DENIED');
    expect(error.message).toBe(
      `plugin path ${JSON.stringify(join(relativeBin, 'my-plugin'))} cannot be resolved for credential plugin allowlist check: exec: "my-plugin": cannot run executable found relative to current directory`,
    );
  });
});
