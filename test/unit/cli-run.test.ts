import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { run } from '../../src/cli/main.js';
import { commands } from '../../src/cli/commands/index.js';
import { captureIo } from '../helpers/library-cli.js';
import { buildProfile } from '../helpers/library-fixtures.js';

let dir: string;
let providers: string;
let profileFile: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-cli-'));
  providers = join(dir, 'providers.json');
  profileFile = join(dir, 'profile.yaml');
  await writeFile(
    providers,
    JSON.stringify({
      providers: [
        {
          name: 'test-provider-1',
          execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'plugin', provideClusterInfo: true },
          profileSourcedCLIArgsPolicy: 'Append',
        },
      ],
    }),
  );
  await writeFile(profileFile, JSON.stringify(buildProfile()));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function cli(argv: string[]) {
  const captured = captureIo();
  const code = await run(argv, {}, captured.io);
  return { code, stdout: captured.stdout(), stderr: captured.stderr() };
}

describe('clusterprofile (in process)', () => {
  it('lists its commands in --help and exits 0', async () => {
    const result = await cli(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('clusterprofile <command>');
    for (const entry of commands) expect(result.stdout).toContain(entry.command.split(' ')[0]);
    expect(result.stderr).toBe('');
  });

  it('shows the kubeconfig flags in `kubeconfig --help`', async () => {
    const result = await cli(['kubeconfig', '--help']);
    expect(result.code).toBe(0);
    for (const flag of ['--profile', '--namespace', '--name', '--clusterprofile-provider-file', '--context-name']) {
      expect(result.stdout).toContain(flag);
    }
  });

  it('is a usage error (exit 2, a coded line and its hint on stderr, nothing on stdout) with an unknown flag', async () => {
    const result = await cli(['kubeconfig', '--profile', 'x', '--bogus']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'ERR_USAGE: unknown flag "--bogus" of clusterprofile kubeconfig\nhint: "clusterprofile kubeconfig --help" lists the flags\n',
    );
  });

  it('answers an unknown command with a usage error and a hint: the nearest command, else where the list is', async () => {
    const far = await cli(['frobnicate']);
    expect(far).toEqual({
      code: 2,
      stdout: '',
      stderr: 'ERR_USAGE: unknown command "frobnicate"\nhint: "clusterprofile --help" lists the commands\n',
    });
    const near = await cli(['kubeconfg', '--profile', 'x']);
    expect(near.code).toBe(2);
    expect(near.stderr).toBe(
      'ERR_USAGE: unknown command "kubeconfg"\nhint: did you mean "clusterprofile kubeconfig --profile x"? "clusterprofile --help" lists the commands\n',
    );
  });

  it('lists the commands on a bare call (a usage error: exit 2, nothing on stdout)', async () => {
    const result = await cli([]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    for (const entry of commands) expect(result.stderr).toContain(`clusterprofile ${entry.command}`);
    expect(result.stderr).toMatch(/\nERR_USAGE: a command is required\n$/);
  });

  it('requires --profile or --namespace with --name, not both', async () => {
    expect((await cli(['kubeconfig'])).stderr).toContain('pass --profile FILE, or --namespace NS --name NAME');
    expect((await cli(['kubeconfig', '--namespace', 'fleet'])).stderr).toContain('--namespace and --name go together');
    const both = await cli(['kubeconfig', '--profile', profileFile, '--name', 'x']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('mutually exclusive');
  });

  it('renders a kubeconfig from a profile file', async () => {
    const result = await cli(['kubeconfig', '--profile', profileFile, '--clusterprofile-provider-file', providers]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const doc = parse(result.stdout);
    expect(doc['current-context']).toBe('test-cluster');
    expect(doc.users[0].user.exec.args).toEqual(['--audience', 'audience']);
    expect(doc.clusters[0].cluster.extensions).toEqual([
      { name: 'client.authentication.k8s.io/exec', extension: { clusterName: 'spoke-1', audience: 'spoke' } },
    ]);
  });

  it('prints a library error as one coded line with exit 1 and nothing on stdout', async () => {
    const result = await cli([
      'kubeconfig',
      '--profile',
      join(dir, 'missing.yaml'),
      '--clusterprofile-provider-file',
      providers,
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      `ERR_PROFILE_READ: cannot read ClusterProfile file ${join(dir, 'missing.yaml')}: no such file (at ${join(dir, 'missing.yaml')})\n`,
    );
  });
});
