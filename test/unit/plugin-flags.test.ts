import { describe, expect, it } from 'vitest';
import { assertNoFlagClash, helpText, parseCommand } from '../../src/plugin/flags.js';

const provider = {
  description: 'test',
  flags: {
    'cluster-id': { type: 'string', required: true, description: 'id' },
    scope: { type: 'string', multiple: true, description: 'scope' },
    verbose: { type: 'boolean', description: 'talk' },
    'key-file': { type: 'string', description: 'key', placeholder: 'FILE' },
  },
} as const;

describe('parseCommand', () => {
  it('parses provider and common flags into typed values', () => {
    const parsed = parseCommand(provider, ['--cluster-id=c1', '--scope', 'a', '--scope', 'b', '--cache-dir', '/tmp/c', '--force-refresh']);
    expect(parsed).toEqual({
      action: 'credential',
      flags: { 'cluster-id': 'c1', scope: ['a', 'b'], verbose: false, 'key-file': undefined },
      cacheDir: '/tmp/c',
      forceRefresh: true,
    });
  });

  it('recognises clean (required flags not needed) and --help / -h', () => {
    expect(parseCommand(provider, ['clean', '--cache-dir', '/x'])).toMatchObject({ action: 'clean', cacheDir: '/x' });
    expect(parseCommand(provider, ['--help']).action).toBe('help');
    expect(parseCommand(provider, ['-h', 'whatever']).action).toBe('help');
  });

  it.each([
    [['--cluster-id', 'c', '--nope'], "Unknown option '--nope'", '--nope'],
    [[], 'missing required flag --cluster-id', '--cluster-id'],
    [['--cluster-id', 'c', 'login'], "unexpected argument 'login'", 'login'],
    [['clean', 'extra'], "unexpected argument 'extra'", 'extra'],
    [['--cluster-id', 'c', '--cache-dir', ''], '--cache-dir must not be empty', '--cache-dir'],
    [['--cluster-id'], "Option '--cluster-id <value>' argument missing", '--cluster-id'],
  ])('%j is a usage error: %s', (argv, message, path) => {
    expect(() => parseCommand(provider, argv)).toThrow(expect.objectContaining({ code: 'ERR_PLUGIN_USAGE', message: expect.stringContaining(message), path }));
  });

  it('refuses (TypeError) a provider flag that clashes with the runtime', () => {
    expect(() => assertNoFlagClash({ 'cache-dir': { type: 'string', description: 'x' } })).toThrow(TypeError);
    expect(() => assertNoFlagClash(provider.flags)).not.toThrow();
  });

  it('help lists every flag with its placeholder and the exit codes', () => {
    const text = helpText('clusterprofile-x', provider);
    expect(text).toContain('--key-file FILE');
    expect(text).toContain('--cluster-id VALUE');
    expect(text).toMatch(/--scope VALUE\s+scope \(repeatable\)/);
    expect(text).toContain('--cache-dir DIR');
    expect(text).toContain('exit codes: 0 ok, 1 no credential (see the message), 2 usage or configuration error');
  });
});
