/**
 * Documents and key files that break the rules, given to the built binaries as users would: an alias bomb in an
 * Identity, a directory where a key or document file belongs, duplicate keys in a providers file. Every time: a coded
 * error naming the file, exit non-zero, nothing on stdout, a short stderr without a stack or the parser's raw words.
 */
import { createPublicKey } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { buildProfile } from '../helpers/library-fixtures.js';
import { runNode, type NodeRunResult } from '../helpers/process.js';
import { createKeyFile, createSigner, liqoIdentityYaml, type TestKey } from '../helpers/tenant-cert-plugin.js';
import { CLI, PLUGIN, execInfo, V1 } from '../helpers/tenant-cert-plugin-run.js';

let root: string;
let key: TestKey;
/** A directory (mode 0700, so only its type is wrong) where a file belongs. */
let directory: string;
/** An Identity that `identity import` accepts with `key`. */
let identityFile: string;

/** A billion laughs: nine levels of nine aliases each (9^9 strings if expanded), inside a valid-looking Identity. */
const ALIAS_BOMB = [
  'apiVersion: authentication.liqo.io/v1beta1',
  'kind: Identity',
  'metadata:',
  '  name: controlplane-member-1',
  '  labels:',
  '    l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...Array.from({ length: 8 }, (_, i) => `    l${i + 1}: &l${i + 1} [${Array(9).fill(`*l${i}`).join(',')}]`),
  'spec:',
  '  clusterID: member-1',
  '  namespace: liqo-tenant-consumer-1',
  '  type: ControlPlane',
  '  authParams:',
  '    signedCRT: *l8',
  '',
].join('\n');

function expectCodedFailure(result: NodeRunResult, code: RegExp, file: string): void {
  expect(result.code, result.stderr).not.toBe(0);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(code);
  expect(result.stderr).toContain(file);
  expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
  expect(Buffer.byteLength(result.stderr)).toBeLessThan(2048);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'cpc-bad-documents-'));
  key = createKeyFile('ecdsa-p256');
  directory = join(root, 'a-directory');
  mkdirSync(directory, { mode: 0o700 });
  const signer = await createSigner();
  const certPem = await signer.issue(createPublicKey(key.privateKey), {
    cn: 'consumer-1',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 86_400_000),
  });
  identityFile = join(root, 'identity.yaml');
  writeFileSync(
    identityFile,
    liqoIdentityYaml({
      provider: 'member-1',
      consumer: 'consumer-1',
      certPem,
      apiServer: 'https://member-1.example:6443',
    }),
    {
      mode: 0o600,
    },
  );
});

describe('an Identity with a YAML alias bomb', () => {
  it.each(['file', 'stdin'])(
    'identity import (%s) refuses it with a coded error, quickly, without expanding it',
    async (via) => {
      const file = join(root, 'bomb.yaml');
      writeFileSync(file, ALIAS_BOMB);
      const args = [
        'identity',
        'import',
        via === 'file' ? file : '-',
        '--key-file',
        key.file,
        '--identity-dir',
        join(root, 'ids'),
      ];
      const result = await runNode(CLI, args, via === 'file' ? {} : { stdin: ALIAS_BOMB });
      expectCodedFailure(
        result,
        /^ERR_TENANT_CERT_IDENTITY_INVALID: .*aliases expand to more than \d+ nodes/,
        via === 'file' ? file : 'stdin',
      );
      expect(result.stderr).not.toContain('Excessive alias count');
      expect(result.ms).toBeLessThan(10_000);
    },
  );
});

describe('a directory where a file belongs', () => {
  it('clusterprofile-tenant-cert --key-file DIR: the key file error, exit 2', async () => {
    const result = await runNode(
      PLUGIN,
      [
        '--cluster-id',
        'consumer-1',
        '--key-file',
        directory,
        '--cache-dir',
        join(root, 'cache'),
        '--identity-dir',
        join(root, 'ids'),
      ],
      { env: { KUBERNETES_EXEC_INFO: execInfo(V1, { providerClusterID: 'member-1' }) } },
    );
    expectCodedFailure(
      result,
      /^clusterprofile-tenant-cert: ERR_TENANT_CERT_KEY_FILE: the key file .* is a directory/,
      directory,
    );
    expect(result.code).toBe(2);
  });

  it('identity import --key-file DIR (a valid Identity): the key file error', async () => {
    const result = await runNode(CLI, [
      'identity',
      'import',
      identityFile,
      '--key-file',
      directory,
      '--identity-dir',
      join(root, 'ids'),
    ]);
    expectCodedFailure(result, /^ERR_TENANT_CERT_KEY_FILE: the key file .* is a directory/, directory);
  });

  it('identity import DIR: the Identity cannot be read', async () => {
    const result = await runNode(CLI, [
      'identity',
      'import',
      directory,
      '--key-file',
      key.file,
      '--identity-dir',
      join(root, 'ids'),
    ]);
    expectCodedFailure(result, /^ERR_IDENTITY_READ: cannot read the Identity: EISDIR/, directory);
  });

  it('tenant generate --key-file DIR (the key keygen made)', async () => {
    const result = await runNode(CLI, [
      'tenant',
      'generate',
      '--key-file',
      directory,
      '--cluster-id',
      'consumer-1',
      '--provider-cluster-id',
      'member-1',
      '--nonce',
      'n',
    ]);
    expectCodedFailure(result, /^ERR_TENANT_INPUT: cannot read --key-file /, directory);
  });

  it('issuer trust --public-key DIR (the public key keygen printed)', async () => {
    const result = await runNode(CLI, [
      'issuer',
      'trust',
      '--data-dir',
      join(root, 'data'),
      '--cluster-id',
      'consumer-1',
      '--public-key',
      directory,
    ]);
    expectCodedFailure(result, /^ERR_ISSUER_CONFIG: cannot read --public-key /, directory);
  });

  it('kubeconfig --profile DIR and --clusterprofile-provider-file DIR', async () => {
    const providers = join(root, 'providers.json');
    writeFileSync(providers, '{"providers": []}');
    const profile = await runNode(CLI, [
      'kubeconfig',
      '--profile',
      directory,
      '--clusterprofile-provider-file',
      providers,
    ]);
    expectCodedFailure(
      profile,
      /^ERR_PROFILE_READ: cannot read ClusterProfile file .*: it is a directory, not a file/,
      directory,
    );
    const profileFile = join(root, 'profile.yaml');
    writeFileSync(profileFile, stringify(buildProfile()));
    const access = await runNode(CLI, [
      'kubeconfig',
      '--profile',
      profileFile,
      '--clusterprofile-provider-file',
      directory,
    ]);
    expectCodedFailure(
      access,
      /^ERR_ACCESS_CONFIG_READ: failed to read access config file .*: it is a directory, not a file/,
      directory,
    );
  });
});

describe('a providers file with a duplicate key', () => {
  const yaml = [
    'providers:',
    '- name: test-provider-1',
    '  execConfig:',
    '    apiVersion: client.authentication.k8s.io/v1',
    '    command: /usr/local/bin/plugin',
    '    command: /tmp/evil',
    '',
  ].join('\n');
  const json =
    '{"providers": [{"name": "test-provider-1", "execConfig": {"apiVersion": "client.authentication.k8s.io/v1", "command": "/usr/local/bin/plugin", "command": "/tmp/evil"}}]}';

  it.each([
    ['YAML', 'providers.yaml', yaml, 'line 6, column 5'],
    ['JSON', 'providers-dup.json', json, `line 1, column ${json.lastIndexOf('"command"') + 1}`],
  ])(
    '%s: ERR_ACCESS_CONFIG_PARSE at the line and column, with the file as path, quoting nothing',
    async (_format, name, text, where) => {
      const file = join(root, name);
      writeFileSync(file, text);
      const profileFile = join(root, 'profile.yaml');
      writeFileSync(profileFile, stringify(buildProfile()));
      const result = await runNode(CLI, [
        'kubeconfig',
        '--profile',
        profileFile,
        '--clusterprofile-provider-file',
        file,
      ]);
      expectCodedFailure(result, /^ERR_ACCESS_CONFIG_PARSE: failed to unmarshal access providers from /, file);
      expect(result.stderr).toContain(`a duplicate key at ${where}`);
      expect(result.stderr).toContain(`(at ${file})`);
      expect(result.stderr).not.toContain('/tmp/evil');
    },
  );
});
