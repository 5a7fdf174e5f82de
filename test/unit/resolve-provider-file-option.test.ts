import yargs from 'yargs';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PROVIDER_FILE,
  PROVIDER_FILE_OPTION,
  withProviderFileOption,
} from '../../src/resolve/provider-file-option.js';

describe('withProviderFileOption (upstream SetupProviderFileFlag)', () => {
  it('registers --clusterprofile-provider-file with the Go default', async () => {
    const args = await withProviderFileOption(yargs([])).strict().parseAsync();
    expect(PROVIDER_FILE_OPTION).toBe('clusterprofile-provider-file');
    expect(DEFAULT_PROVIDER_FILE).toBe('clusterprofile-provider-file.json');
    expect(args['clusterprofile-provider-file']).toBe('clusterprofile-provider-file.json');
  });

  it('takes a path given as --flag value or --flag=value', async () => {
    expect(
      (await withProviderFileOption(yargs(['--clusterprofile-provider-file', '/etc/p.json'])).parseAsync())[
        'clusterprofile-provider-file'
      ],
    ).toBe('/etc/p.json');
    expect(
      (await withProviderFileOption(yargs(['--clusterprofile-provider-file=/etc/q.yaml'])).parseAsync())[
        'clusterprofile-provider-file'
      ],
    ).toBe('/etc/q.yaml');
  });

  it('shows the flag and its default in --help', async () => {
    let output = '';
    await withProviderFileOption(yargs(['--help']))
      .exitProcess(false)
      .parseAsync(['--help'], {}, (_error, _args, text) => {
        output = text;
      });
    expect(output).toContain('--clusterprofile-provider-file');
    expect(output).toContain('[default: "clusterprofile-provider-file.json"]');
  });
});
