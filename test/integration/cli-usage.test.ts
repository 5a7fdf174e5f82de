/**
 * The `clusterprofile` command line as a person meets it (the built bins, child processes): --version on every
 * binary, the command list on a bare call, per-action help, "did you mean", `issuer list` on a missing data dir — and
 * every hint the CLI prints that names a command or a flag is followed: the test runs what the hint says and the
 * problem is gone.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { runBin, type BinResult } from '../helpers/library-cli.js';
import { buildProfile } from '../helpers/library-fixtures.js';
import { runNode } from '../helpers/process.js';
import { createTestCa, startHttpsServer, type TestHttpsServer } from '../helpers/tls.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const { version, bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
const dir = mkdtempSync(join(tmpdir(), 'cpc-cli-usage-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `clusterprofile <args>` in the test directory, HOME there too (no ~/.kube/config). */
const cli = (args: readonly string[], env: Record<string, string> = {}): Promise<BinResult> =>
  runBin([...args], { cwd: dir, env: { HOME: dir, ...env } });

/** The `hint:` line of an error. */
function hintOf(result: BinResult): string {
  const hint = /^hint: (.*)$/m.exec(result.stderr)?.[1];
  expect(hint, result.stderr).toBeDefined();
  return hint!;
}

/** The words of a command a hint quotes, without the leading `clusterprofile`. */
function words(command: string): string[] {
  const [program, ...rest] = command.split(' ');
  expect(program).toBe('clusterprofile');
  return rest;
}

function ok(result: BinResult): string {
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return result.stdout;
}

/** Exit 0 (stderr may log progress). */
function done(result: BinResult): string {
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

describe('--version', () => {
  it.each(Object.entries(bin))('%s --version prints the package version', async (_name, script) => {
    const result = await runNode(join(root, script), ['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe('finding one’s way', () => {
  it('a bare clusterprofile lists the commands (usage error: exit 2, nothing on stdout)', async () => {
    const result = await cli([]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    for (const command of [
      'kubeconfig',
      'keygen',
      'identity <action>',
      'token <action>',
      'issuer <action>',
      'tenant <action>',
    ]) {
      expect(result.stderr).toContain(`clusterprofile ${command}`);
    }
    expect(result.stderr.trimEnd().split('\n').at(-1)).toBe('ERR_USAGE: a command is required');
  });

  it('issuer serve --help shows serve alone: its usage line and its flags, none of trust', async () => {
    const serve = ok(await cli(['issuer', 'serve', '--help']));
    expect(serve).toMatch(/^clusterprofile issuer serve --data-dir DIR/);
    expect(serve).not.toContain('clusterprofile issuer trust');
    for (const flag of ['--listen', '--cert-lifetime', '--signer', '--data-dir']) expect(serve).toContain(flag);
    expect(serve).not.toContain('--public-key');
    const trust = ok(await cli(['issuer', 'trust', '--help']));
    expect(trust).toContain('--public-key');
    expect(trust).not.toContain('--listen');
    const all = ok(await cli(['issuer', '--help']));
    for (const flag of ['--listen', '--public-key']) expect(all).toContain(flag);
    const nonce = ok(await cli(['tenant', 'nonce', '--help']));
    expect(nonce).toContain('--ttl');
    expect(nonce).not.toContain('--key-file');
  });

  it('a mistyped command: "did you mean" the nearest, and the suggested command line works', async () => {
    const keyFile = join(dir, 'typo.key');
    const typo = await cli(['kegen', '--out', keyFile]);
    expect(typo.code).toBe(2);
    expect(typo.stdout).toBe('');
    expect(typo.stderr.split('\n')[0]).toBe('ERR_USAGE: unknown command "kegen"');
    const hint = hintOf(typo);
    expect(hint).toBe(
      `did you mean "clusterprofile keygen --out ${keyFile}"? "clusterprofile --help" lists the commands`,
    );
    const suggested = /did you mean "([^"]+)"/.exec(hint)![1]!;
    expect(ok(await cli(words(suggested)))).toContain('-----BEGIN PUBLIC KEY-----');
    const list = /"(clusterprofile --help)" lists/.exec(hint)![1]!;
    expect(ok(await cli(words(list)))).toContain('clusterprofile keygen');
  });

  it('a mistyped action: "did you mean" the nearest action, and that command line works', async () => {
    const dataDir = join(dir, 'typo-issuer');
    const typo = await cli(['issuer', 'lsit', '--data-dir', dataDir]);
    expect(typo.code).toBe(2);
    expect(typo.stderr.split('\n')[0]).toBe('ERR_USAGE: unknown action "lsit" of clusterprofile issuer');
    const hint = hintOf(typo);
    expect(hint).toBe(
      `did you mean "clusterprofile issuer list --data-dir ${dataDir}"? "clusterprofile issuer --help" lists the actions`,
    );
    // The suggestion is the right action; this data dir does not exist yet, which `list` now says (next test).
    expect((await cli(words(/did you mean "([^"]+)"/.exec(hint)![1]!))).stderr).toMatch(
      /^ERR_ISSUER_CONFIG: there is no issuer data dir/,
    );
    expect(ok(await cli(words(/"(clusterprofile issuer --help)" lists/.exec(hint)![1]!)))).toContain(
      'clusterprofile issuer untrust',
    );
    const far = await cli(['issuer', 'frobnicate', '--data-dir', dataDir]);
    expect(hintOf(far)).toBe('"clusterprofile issuer --help" lists the actions');
  });

  it("a missing flag value points at the command's --help, which explains the flag", async () => {
    const result = await cli(['kubeconfig', '--profile']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const see = /\(see "([^"]+)"\)/.exec(result.stderr)?.[1];
    expect(see).toBe('clusterprofile kubeconfig --help');
    expect(ok(await cli(words(see!)))).toContain('--profile');
  });

  // Every kind of mistyped word goes through the same path: one coded line naming the word and the command, the
  // nearest known word put back into the command line, exit 2, nothing on stdout.
  it.each([
    {
      typed: ['fleet', 'stat', '-n', 'fleet'],
      error: 'unknown action "stat" of clusterprofile fleet',
      hint: 'did you mean "clusterprofile fleet status -n fleet"? "clusterprofile fleet --help" lists the actions',
    },
    {
      typed: ['kubeconfig', '--profle', 'p.yaml'],
      error: 'unknown flag "--profle" of clusterprofile kubeconfig',
      hint: 'did you mean "clusterprofile kubeconfig --profile p.yaml"? "clusterprofile kubeconfig --help" lists the flags',
    },
    {
      typed: ['issuer', 'serve', '--data-dri=d'],
      error: 'unknown flag "--data-dri" of clusterprofile issuer serve',
      hint: 'did you mean "clusterprofile issuer serve --data-dir=d"? "clusterprofile issuer serve --help" lists the flags',
    },
    {
      typed: ['fleet', 'status', '-n', 'fleet', '-o', 'jsno'],
      error: 'unknown value "jsno" of --output (one of table, json, yaml)',
      hint: 'did you mean "clusterprofile fleet status -n fleet -o json"? "clusterprofile fleet --help" explains --output',
    },
    {
      typed: ['kubeconfig', '--profile', 'p.yaml', '--bogus'],
      error: 'unknown flag "--bogus" of clusterprofile kubeconfig',
      hint: '"clusterprofile kubeconfig --help" lists the flags',
    },
    {
      typed: ['keygen', 'extra'],
      error: 'unexpected argument "extra" of clusterprofile keygen',
      hint: '"clusterprofile keygen --help" shows what it takes',
    },
  ])('clusterprofile $typed: $error', async ({ typed, error, hint }) => {
    const result = await cli(typed);
    expect(result).toEqual({ code: 2, stdout: '', stderr: `ERR_USAGE: ${error}\nhint: ${hint}\n` });
    const suggested = /did you mean "([^"]+)"/.exec(hint)?.[1];
    if (suggested === undefined) return;
    // The suggestion parses: whatever it says next is not a usage error about the word that was wrong.
    const followed = await cli(words(suggested));
    expect(followed.stderr).not.toMatch(/^ERR_USAGE: unknown/);
  });
});

describe('every hint, followed', () => {
  let pub: string;
  let key: string;
  beforeAll(async () => {
    key = join(dir, 'c1.key');
    pub = join(dir, 'c1.pub');
    writeFileSync(pub, ok(await cli(['keygen', '--out', key])));
  });

  it('issuer list on a missing data dir is an error; the hinted issuer trust creates it, and list then shows the consumer', async () => {
    const dataDir = join(dir, 'new-issuer');
    const missing = await cli(['issuer', 'list', '--data-dir', dataDir]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr.split('\n')[0]).toBe(
      `ERR_ISSUER_CONFIG: there is no issuer data dir ${dataDir} (at --data-dir)`,
    );
    const hint = hintOf(missing);
    const command = /; (clusterprofile issuer trust .*) creates it$/.exec(hint)![1]!;
    ok(await cli(words(command.replace('CONSUMER_ID', 'c1').replace('FILE', pub))));
    expect(ok(await cli(['issuer', 'list', '--data-dir', dataDir]))).toMatch(/^c1\ted25519\tSHA256:/);
  });

  it('keygen onto an existing key: the hinted --force replaces it', async () => {
    const file = join(dir, 'again.key');
    ok(await cli(['keygen', '--out', file]));
    const exists = await cli(['keygen', '--out', file]);
    expect(exists.code).toBe(1);
    expect(hintOf(exists)).toMatch(/^choose another --out, or pass --force to replace the key/);
    expect(ok(await cli(['keygen', '--out', file, '--force']))).toContain('-----BEGIN PUBLIC KEY-----');
  });

  describe('kubeconfig', () => {
    let hub: TestHttpsServer;
    beforeAll(async () => {
      writeFileSync(
        join(dir, 'providers.json'),
        JSON.stringify({
          providers: [
            {
              name: 'test-provider-1',
              execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 'plugin' },
            },
          ],
        }),
      );
      writeFileSync(join(dir, 'one.yaml'), stringify(buildProfile()));
      writeFileSync(join(dir, 'none.yaml'), stringify({ apiVersion: 'v1', kind: 'List', items: [] }));
      const ca = await createTestCa();
      hub = await startHttpsServer({
        ca,
        handler(request, _req, res) {
          res.setHeader('content-type', 'application/json');
          const ok =
            request.bearer === 'hub-token' &&
            request.url === '/apis/multicluster.x-k8s.io/v1alpha1/namespaces/fleet/clusterprofiles/spoke-1';
          res.writeHead(ok ? 200 : 404);
          res.end(
            JSON.stringify(
              ok
                ? { ...buildProfile(), metadata: { name: 'spoke-1', namespace: 'fleet' } }
                : { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404 },
            ),
          );
        },
      });
      writeFileSync(
        join(dir, 'hub.kubeconfig'),
        stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'hub', cluster: { server: hub.url, 'certificate-authority-data': ca.certBase64 } }],
          users: [{ name: 'reader', user: { token: 'hub-token' } }],
          contexts: [{ name: 'hub', context: { cluster: 'hub', user: 'reader' } }],
          'current-context': 'hub',
        }),
      );
    });
    afterAll(async () => {
      await hub?.close();
    });

    it('without a providers file: the hinted --clusterprofile-provider-file', async () => {
      const missing = await cli(['kubeconfig', '--profile', 'one.yaml']);
      expect(missing.stderr).toMatch(/^ERR_ACCESS_CONFIG_READ: /);
      expect(hintOf(missing)).toBe('pass the providers file with --clusterprofile-provider-file');
      expect(
        parse(
          ok(await cli(['kubeconfig', '--profile', 'one.yaml', '--clusterprofile-provider-file', 'providers.json'])),
        ),
      ).toHaveProperty('current-context');
    });

    it('a file without exactly one profile: the hinted file with one', async () => {
      const none = await cli([
        'kubeconfig',
        '--profile',
        'none.yaml',
        '--clusterprofile-provider-file',
        'providers.json',
      ]);
      expect(none.stderr).toMatch(/^ERR_PROFILE_PARSE: /);
      expect(hintOf(none)).toBe(
        'give a file with one ClusterProfile, or read it from the hub with --namespace and --name',
      );
      ok(await cli(['kubeconfig', '--profile', 'one.yaml', '--clusterprofile-provider-file', 'providers.json']));
    });

    it('no hub kubeconfig: the hinted KUBECONFIG (pointing at the hub) works', async () => {
      const args = [
        'kubeconfig',
        '-n',
        'fleet',
        '--name',
        'spoke-1',
        '--clusterprofile-provider-file',
        'providers.json',
      ];
      const nohub = await cli(args);
      expect(nohub.stderr).toMatch(/^ERR_HUB_CONFIG: /);
      expect(hintOf(nohub)).toMatch(/^set KUBECONFIG, or create ~\/\.kube\/config/);
      expect(parse(ok(await cli(args, { KUBECONFIG: join(dir, 'hub.kubeconfig') })))['current-context']).toBe(
        'fleet/spoke-1',
      );
      mkdirSync(join(dir, '.kube'), { recursive: true });
      writeFileSync(join(dir, '.kube', 'config'), readFileSync(join(dir, 'hub.kubeconfig')));
      ok(await cli(args));
      rmSync(join(dir, '.kube'), { recursive: true });
    });
  });

  describe('the manual tenant-cert flow', () => {
    it('tenant nonce on a data dir without an issuer: the hinted --provider-cluster-id sets it up', async () => {
      const dataDir = join(dir, 'manual');
      ok(await cli(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', 'c1', '--public-key', pub]));
      const first = await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c1']);
      expect(first.stderr).toMatch(/^ERR_ISSUER_CONFIG: the data dir .* has no issuer yet/);
      expect(hintOf(first)).toBe(
        'run clusterprofile issuer serve --cluster-id PROVIDER_ID first, or pass --provider-cluster-id',
      );
      const nonce = await cli([
        'tenant',
        'nonce',
        '--data-dir',
        dataDir,
        '--cluster-id',
        'c1',
        '--provider-cluster-id',
        'p1',
      ]);
      expect(nonce.code).toBe(0);
      expect(nonce.stdout).toMatch(/^\S{40,}\n$/);
      // Recorded: later runs need no --provider-cluster-id.
      expect((await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c1'])).code).toBe(0);
    });

    it('a nonce for a consumer the issuer does not trust: the hinted issuer trust (with the data dir) fixes it', async () => {
      const dataDir = join(dir, 'manual');
      const untrusted = await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c2']);
      expect(untrusted.stderr).toMatch(/^ERR_TENANT_UNKNOWN_CONSUMER: /);
      const hint = hintOf(untrusted);
      const command = /^the provider admin runs: (clusterprofile issuer trust .*)$/.exec(hint)![1]!;
      expect(command).toBe('clusterprofile issuer trust --cluster-id c2 --public-key FILE --data-dir DIR');
      ok(await cli(words(command.replace('DIR', dataDir).replace('FILE', pub))));
      expect((await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c2'])).code).toBe(0);
    });

    it('a data dir others can read: the hinted chmod 700', async () => {
      const dataDir = join(dir, 'open');
      mkdirSync(dataDir, { mode: 0o755 });
      chmodSync(dataDir, 0o755);
      const open = await cli([
        'tenant',
        'nonce',
        '--data-dir',
        dataDir,
        '--cluster-id',
        'c1',
        '--provider-cluster-id',
        'p1',
      ]);
      expect(open.stderr).toMatch(/^ERR_ISSUER_DATA_DIR: /);
      const hint = hintOf(open);
      expect(hint).toBe(`chmod 700 ${dataDir}`);
      execFileSync('sh', ['-c', hint]);
      ok(await cli(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', 'c1', '--public-key', pub]));
      expect(
        (await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c1', '--provider-cluster-id', 'p1']))
          .code,
      ).toBe(0);
    });

    it('identity import with an unusable key file: each hint (keygen, chmod 600, openssl pkcs8) fixes the key file', async () => {
      const dataDir = join(dir, 'manual');
      const nonce = done(await cli(['tenant', 'nonce', '--data-dir', dataDir, '--cluster-id', 'c1'])).trim();
      writeFileSync(
        join(dir, 'tenant.yaml'),
        done(
          await cli([
            'tenant',
            'generate',
            '--key-file',
            key,
            '--cluster-id',
            'c1',
            '--provider-cluster-id',
            'p1',
            '--nonce',
            nonce,
          ]),
        ),
      );
      const accepted = await cli(['tenant', 'accept', '--data-dir', dataDir, 'tenant.yaml']);
      expect(accepted.code).toBe(0);
      writeFileSync(join(dir, 'identity.yaml'), accepted.stdout);
      const importWith = (file: string) =>
        cli(['identity', 'import', 'identity.yaml', '--key-file', file, '--identity-dir', join(dir, 'identities')]);

      // No key file: keygen makes one (a new key, so the certificate is not for it: a different error).
      const made = join(dir, 'made.key');
      const missing = await importWith(made);
      expect(missing.stderr).toMatch(/^ERR_TENANT_CERT_KEY_FILE: cannot read the key file/);
      const keygen = /^make one with: (clusterprofile keygen --out FILE)$/.exec(hintOf(missing))![1]!;
      ok(await cli(words(keygen.replace('FILE', made))));
      const fresh = await importWith(made);
      expect(fresh.code).not.toBe(0);
      expect(fresh.stderr).not.toContain('ERR_TENANT_CERT_KEY_FILE: cannot read');

      // Readable by others: the hinted chmod.
      chmodSync(key, 0o644);
      const open = await importWith(key);
      expect(open.stderr).toMatch(/^ERR_TENANT_CERT_KEY_FILE: the key file is accessible by others/);
      execFileSync('sh', ['-c', hintOf(open)]);
      const imported = await importWith(key);
      expect(imported.code).toBe(0);
      expect(imported.stderr).toMatch(/^imported the Identity of p1 for c1/);

      // A SEC1 ("BEGIN EC PRIVATE KEY") key: the hinted openssl conversion makes a PKCS#8 file that is read.
      const old = join(dir, 'old.key');
      execFileSync('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', old]);
      chmodSync(old, 0o600);
      const sec1 = await importWith(old);
      expect(sec1.stderr).toMatch(/^ERR_TENANT_CERT_KEY_FILE: the key file is not a PKCS#8 PEM private key/);
      const convert = /^convert with: (openssl pkcs8 .*)$/.exec(hintOf(sec1))![1]!;
      const converted = join(dir, 'new.key');
      execFileSync('sh', ['-c', `umask 077 && ${convert.replace('OLD', old).replace('NEW', converted)}`]);
      const after = await importWith(converted);
      expect(after.stderr).not.toContain('ERR_TENANT_CERT_KEY_FILE');
    });
  });
});

describe('token-request --help', () => {
  it('says which bootstrap identity is the default', async () => {
    const help = await runNode(join(root, 'bin', 'clusterprofile-token-request.mjs'), ['--help']);
    expect(help.code).toBe(0);
    const line = help.stdout.split('\n').find((text) => text.trimStart().startsWith('--bootstrap KIND'));
    expect(line).toContain(
      'kubeconfig (the default: --bootstrap-kubeconfig, else KUBECONFIG, else ~/.kube/config, else in-cluster)',
    );
    expect(line).toContain('tenant-cert (the default when --key-file is given without --bootstrap-kubeconfig)');
  });
});
