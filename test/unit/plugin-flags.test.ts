import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { describe, expect, it } from 'vitest';
import { assertNoFlagClash, helpText, parseCommand, readCommonForm } from '../../src/plugin/flags.js';

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
    const parsed = parseCommand(provider, [
      '--cluster-id=c1',
      '--scope',
      'a',
      '--scope',
      'b',
      '--cache-dir',
      '/tmp/c',
      '--force-refresh',
    ]);
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
    expect(() => parseCommand(provider, argv)).toThrow(
      expect.objectContaining({ code: 'ERR_PLUGIN_USAGE', message: expect.stringContaining(message), path }),
    );
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

describe('readCommonForm (the fast path of parseCommand)', () => {
  const options: ParseArgsOptionsConfig = {
    help: { type: 'boolean', short: 'h' },
    'cache-dir': { type: 'string' },
    'force-refresh': { type: 'boolean' },
    'cluster-id': { type: 'string' },
    scope: { type: 'string', multiple: true },
  };
  const parsed = (args: string[]) => {
    try {
      const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true });
      return { values: { ...values }, positionals };
    } catch (error) {
      return { error: (error as Error).message };
    }
  };

  it.each([
    [['--cluster-id', 'c1', '--cache-dir', '/c']],
    [['--cluster-id=c1', '--cache-dir=', '--force-refresh']],
    [['clean', '--cache-dir', '/c', 'extra']],
    [['--scope', 'a', '--scope=b', '--cluster-id', 'x', '--cluster-id', 'y']],
    [['--cluster-id', 'has=equals', '--help']],
    [[]],
  ])('reads %j exactly as parseArgs does', (args) => {
    const fast = readCommonForm(args, options);
    expect(fast).toBeDefined();
    expect({ values: { ...fast!.values }, positionals: fast!.positionals }).toEqual(parsed(args));
  });

  it.each([
    [['-h']],
    [['--', '--cluster-id']],
    [['--cluster-id', '-5']],
    [['--cluster-id', '--force-refresh']],
    [['--cluster-id']],
    [['--force-refresh=yes']],
    [['--no-such-flag']],
    [['--constructor', 'x']],
    [['-']],
  ])('leaves %j to parseArgs', (args) => {
    expect(readCommonForm(args, options)).toBeUndefined();
  });

  it("parseCommand gives parseArgs's answer either way, errors included", () => {
    expect(parseCommand(provider, ['-h']).action).toBe('help');
    expect(() => parseCommand(provider, ['--cluster-id'])).toThrow("Option '--cluster-id <value>' argument missing");
    expect(() => parseCommand(provider, ['--cluster-id', '--verbose'])).toThrow(
      "Option '--cluster-id' argument is ambiguous",
    );
    expect(parseCommand(provider, ['--', 'clean']).action).toBe('clean');
  });
});
