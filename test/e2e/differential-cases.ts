/**
 * Cases of the differential test (test/e2e/differential.test.ts): hand-written ones, one or more per rule of
 * docs/reference/providers-file.md "Semantics (as upstream)" and per listed difference, and a seeded generator of mixed ones.
 *
 * A hand case says what the comparison must find: `expect: []` = full agreement, or the exact set of listed
 * difference classes (`env-order` is always optional: upstream's env order is random).
 */
import type { KeyPairPem } from '../helpers/tls.js';

export const V1 = 'client.authentication.k8s.io/v1';
export const V1B1 = 'client.authentication.k8s.io/v1beta1';
const ARGS = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-args';
const ENVS = 'clusterprofiles.multicluster.x-k8s.io/exec/additional-envs';
const EXEC = 'client.authentication.k8s.io/exec';

export interface ResolveCase {
  kind: 'resolve';
  name: string;
  /** The providers file's text, as both sides read it. */
  providersFile: string;
  /** Resolved in order; the shared run keeps one loaded providers config across them. */
  profiles: unknown[];
  expect?: readonly string[];
}

export interface OutputCase {
  kind: 'output';
  name: string;
  apiVersion: string;
  stdout: string;
  expect?: readonly string[];
}

export type Case = ResolveCase | OutputCase;

export interface Pki {
  caBase64: string;
  alice: KeyPairPem;
  bob: KeyPairPem;
}

type Json = unknown;

const provider = (overrides: Record<string, Json> = {}, exec: Record<string, Json> = {}): Record<string, Json> => ({
  name: 'p',
  execConfig: {
    apiVersion: V1,
    command: 'cmd',
    args: ['--base'],
    env: [{ name: 'FILE', value: 'file' }],
    provideClusterInfo: true,
    ...exec,
  },
  ...overrides,
});
const file = (...providers: Json[]): string => JSON.stringify({ providers });
const cluster = (extra: Record<string, Json> = {}): Record<string, Json> => ({
  server: 'https://spoke.example:6443',
  ...extra,
});
const profileOf = (status: Record<string, Json>, name = 'x', apiVersion = 'multicluster.x-k8s.io/v1alpha1'): Json => ({
  apiVersion,
  kind: 'ClusterProfile',
  metadata: { name, namespace: 'fleet' },
  spec: { displayName: name, clusterManager: { name: 'm' } },
  status,
});
const onCluster = (c: Record<string, Json>, name = 'x', providerName = 'p'): Json =>
  profileOf({ accessProviders: [{ name: providerName, cluster: c }] }, name);
const ext = (name: string, extension: Json): Record<string, Json> => ({ name, extension });
const withExt = (...extensions: Json[]): Json => onCluster(cluster({ extensions }));

const resolve = (
  name: string,
  providersFile: string,
  profiles: Json[],
  expect: readonly string[] = [],
): ResolveCase => ({
  kind: 'resolve',
  name,
  providersFile,
  profiles,
  expect,
});

const credential = (status: Json, extra: Record<string, Json> = {}, apiVersion = V1): string =>
  JSON.stringify({ apiVersion, kind: 'ExecCredential', ...extra, status });
const output = (name: string, stdout: string, apiVersion = V1): OutputCase => ({
  kind: 'output',
  name,
  apiVersion,
  stdout,
  expect: [],
});

export function handCases(pki: Pki): Case[] {
  const appendBoth = provider({
    profileSourcedCLIArgsPolicy: 'Append',
    profileSourcedEnvVarsPolicy: 'AppendIfNotExists',
  });
  const replaceEnv = provider({ profileSourcedEnvVarsPolicy: 'Replace' });
  const appendEnv = provider({ profileSourcedEnvVarsPolicy: 'AppendIfNotExists' });
  const appendArgs = provider({ profileSourcedCLIArgsPolicy: 'Append' });
  const cases: Case[] = [
    // Semantics (as upstream) 1–2: which provider.
    resolve('credentialProviders then accessProviders, which win on a name clash', file(provider()), [
      profileOf({
        credentialProviders: [{ name: 'p', cluster: cluster({ server: 'https://deprecated' }) }],
        accessProviders: [{ name: 'p', cluster: cluster({ server: 'https://current' }) }],
      }),
    ]),
    resolve('a provider listed only in credentialProviders is used', file(provider()), [
      profileOf({ credentialProviders: [{ name: 'p', cluster: cluster() }] }),
    ]),
    resolve(
      'the first providers-file entry the profile lists wins; the profile order does not matter',
      file(provider({ name: 'b' }, { command: 'b' }), provider({ name: 'a' }, { command: 'a' })),
      [
        profileOf({
          accessProviders: [
            { name: 'a', cluster: cluster() },
            { name: 'b', cluster: cluster() },
          ],
        }),
      ],
    ),
    resolve('no matching provider: both refuse', file(provider({ name: 'other' })), [onCluster(cluster())]),
    resolve('an empty providers file has no providers: both refuse', '{}', [onCluster(cluster())]),
    resolve('the chosen entry has no exec config: both refuse', file({ name: 'p' }), [onCluster(cluster())]),
    resolve('a v1alpha2 profile', file(provider()), [
      profileOf({ accessProviders: [{ name: 'p', cluster: cluster() }] }, 'x', 'multicluster.x-k8s.io/v1alpha2'),
    ]),
    // 3: reserved extensions and policies.
    resolve('additional-args under Append are appended', file(appendArgs), [withExt(ext(ARGS, ['--one', '--two=2']))]),
    resolve('additional-args under Ignore are ignored', file(provider({ profileSourcedCLIArgsPolicy: 'Ignore' })), [
      withExt(ext(ARGS, ['--one'])),
    ]),
    resolve('additional-args without a policy are ignored', file(provider()), [withExt(ext(ARGS, ['--one']))]),
    resolve('additional-envs under AppendIfNotExists: the file wins a clash', file(appendEnv), [
      withExt(ext(ENVS, { FILE: 'ext', NEW: 'n' })),
    ]),
    resolve('additional-envs under Replace: the extension wins a clash', file(replaceEnv), [
      withExt(ext(ENVS, { FILE: 'ext', NEW: 'n' })),
    ]),
    resolve('additional-envs under Ignore are ignored', file(provider({ profileSourcedEnvVarsPolicy: 'Ignore' })), [
      withExt(ext(ENVS, { NEW: 'n' })),
    ]),
    resolve(
      'an unknown args policy is refused when the extension is present',
      file(provider({ profileSourcedCLIArgsPolicy: 'Prepend' })),
      [withExt(ext(ARGS, ['--a']))],
    ),
    resolve(
      'an unknown args policy is harmless without the extension',
      file(provider({ profileSourcedCLIArgsPolicy: 'Prepend' })),
      [withExt()],
    ),
    resolve(
      'an unknown env policy is refused when the extension is present',
      file(provider({ profileSourcedEnvVarsPolicy: 'Merge' })),
      [withExt(ext(ENVS, { A: 'b' }))],
    ),
    resolve(
      'an unknown env policy is harmless without the extension',
      file(provider({ profileSourcedEnvVarsPolicy: 'Merge' })),
      [withExt(ext(ARGS, ['x']))],
    ),
    resolve('scalars become their text', file(appendBoth), [
      // biome-ignore lint/correctness/noPrecisionLoss: a number past 2^53 on purpose, as a providers file may hold one
      withExt(ext(ARGS, [8080, true, 1.5, 1e21, 12345678901234567890]), ext(ENVS, { N: 1, B: false })),
    ]),
    resolve('null items of an additional-args list are dropped', file(appendArgs), [
      withExt(ext(ARGS, [null, '--a', null])),
    ]),
    resolve('a null additional-envs value is an empty string', file(appendEnv), [withExt(ext(ENVS, { E: null }))]),
    resolve(
      'null payloads add nothing',
      file(appendBoth),
      [withExt(ext(ARGS, null), ext(ENVS, null))],
      ['upstream-panic'],
    ),
    resolve(
      'a null additional-envs payload without file env adds nothing',
      file(provider({ profileSourcedEnvVarsPolicy: 'Replace' }, { env: [] })),
      [withExt(ext(ENVS, null))],
    ),
    resolve('a bad additional-args payload is refused', file(appendArgs), [withExt(ext(ARGS, { not: 'a list' }))]),
    resolve('a nested additional-args item is refused', file(appendArgs), [withExt(ext(ARGS, ['ok', ['nested']]))]),
    resolve('a bad additional-envs payload is refused', file(appendEnv), [withExt(ext(ENVS, ['A=b']))]),
    resolve('a nested additional-envs value is refused', file(replaceEnv), [withExt(ext(ENVS, { A: { b: 1 } }))]),
    resolve('a bad payload is ignored when the policy ignores the extension', file(provider()), [
      withExt(ext(ARGS, 'garbage'), ext(ENVS, 42)),
    ]),
    resolve(
      'a name twice in the file env, no env policy: passed as is',
      file(
        provider(
          {},
          {
            env: [
              { name: 'X', value: '1' },
              { name: 'X', value: '2' },
            ],
          },
        ),
      ),
      [withExt()],
    ),
    resolve(
      'a name twice in the file env, AppendIfNotExists: the last value',
      file(
        provider(
          { profileSourcedEnvVarsPolicy: 'AppendIfNotExists' },
          {
            env: [
              { name: 'X', value: 'first' },
              { name: 'X', value: 'last' },
            ],
          },
        ),
      ),
      [withExt(ext(ENVS, {}))],
    ),
    resolve(
      'a name twice in the file env, Replace: the first value',
      file(
        provider(
          { profileSourcedEnvVarsPolicy: 'Replace' },
          {
            env: [
              { name: 'X', value: 'first' },
              { name: 'X', value: 'last' },
            ],
          },
        ),
      ),
      [withExt(ext(ENVS, {}))],
    ),
    resolve(
      'null items of the file args are empty strings (Go encoding/json)',
      file(provider({}, { args: ['a', null] })),
      [withExt()],
    ),
    // Upstream's YAML decoder of the payloads.
    resolve('an env name of 1022 characters (1024 as JSON text) is accepted', file(appendEnv), [
      withExt(ext(ENVS, { ['K'.repeat(1022)]: 'v' })),
    ]),
    resolve('an env name of 1023 characters is refused', file(appendEnv), [
      withExt(ext(ENVS, { ['K'.repeat(1023)]: 'v' })),
    ]),
    resolve('an env name whose JSON escapes pass 1024 characters is refused', file(appendEnv), [
      withExt(ext(ENVS, { ['<'.repeat(171)]: 'v' })),
    ]),
    resolve('an env name of 1022 code points beyond the BMP is accepted', file(appendEnv), [
      withExt(ext(ENVS, { ['\u{1f600}'.repeat(1022)]: 'v' })),
    ]),
    resolve('C1 control characters in a payload are refused', file(appendArgs), [withExt(ext(ARGS, ['a\u0080b']))]),
    resolve('DEL in an env value is refused', file(appendEnv), [withExt(ext(ENVS, { A: 'a\u007fb' }))]),
    resolve('U+FFFE in a payload is refused', file(appendArgs), [withExt(ext(ARGS, ['\ufffe']))]),
    resolve('escaped control characters, NBSP, LS, BOM and astral characters pass', file(appendBoth), [
      withExt(ext(ARGS, ['a\u0001\n\tb', '\u00a0\u2028\u2029\ufeff\u{1f600}']), ext(ENVS, { 'A B': '<&>' })),
    ]),
    resolve(
      'NEL in a payload: upstream folds it to a space, we refuse',
      file(appendArgs),
      [withExt(ext(ARGS, ['a\u0085b']))],
      ['nel-refused'],
    ),
    // Duplicate extension names: client-go's conversion to the internal Cluster refuses them.
    resolve('the same additional-args extension twice is refused', file(appendArgs), [
      withExt(ext(ARGS, ['1']), ext(ARGS, ['2'])),
    ]),
    resolve('the exec extension twice is refused', file(provider()), [
      withExt(ext(EXEC, { n: 1 }), ext(EXEC, { n: 2 })),
    ]),
    resolve('an unreserved extension name twice is refused', file(provider()), [
      withExt(ext('example.com/x', {}), ext('example.com/x', {})),
    ]),
    resolve('a repeated name after a null payload is accepted (the null is not stored)', file(appendArgs), [
      withExt(ext(ARGS, null), ext(ARGS, ['z']), ext(EXEC, null), ext(EXEC, { n: 2 })),
    ]),
    resolve('a null payload after a repeated name is refused', file(provider()), [
      withExt(ext(EXEC, { n: 1 }), ext(EXEC, null)),
    ]),
    // 4–5: the connection.
    resolve('the exec extension becomes the plugin’s spec.cluster.config', file(provider()), [
      withExt(ext(EXEC, { audience: 'a', nested: { list: [1, 'x'] } })),
    ]),
    resolve('a scalar exec extension is passed as is', file(provider()), [withExt(ext(EXEC, 'str'))]),
    resolve(
      'interactiveMode is always Never',
      file(provider({}, { interactiveMode: 'Always' })),
      [withExt()],
      ['exec-info-config-null'],
    ),
    resolve(
      'certificate-authority is ignored',
      file(provider()),
      [onCluster(cluster({ 'certificate-authority': '/etc/ca.crt' }))],
      ['exec-info-config-null'],
    ),
    resolve(
      'CA data is carried',
      file(provider()),
      [onCluster(cluster({ 'certificate-authority-data': pki.caBase64 }))],
      ['exec-info-config-null'],
    ),
    resolve(
      'CA data with line breaks is carried in Go’s canonical form',
      file(provider()),
      [
        onCluster(
          cluster({ 'certificate-authority-data': `${(pki.caBase64.match(/.{1,64}/g) ?? []).join('\n')}\r\n` }),
        ),
      ],
      ['exec-info-config-null'],
    ),
    resolve(
      'CA data with non-canonical padding bits is carried canonically',
      file(provider()),
      [onCluster(cluster({ 'certificate-authority-data': 'QR==' }))],
      ['exec-info-config-null'],
    ),
    resolve('CA data without padding is refused', file(provider()), [
      onCluster(cluster({ 'certificate-authority-data': 'QQ' })),
    ]),
    resolve('CA data with a space is refused', file(provider()), [
      onCluster(cluster({ 'certificate-authority-data': 'QU JD' })),
    ]),
    resolve('CA data after padding is refused', file(provider()), [
      onCluster(cluster({ 'certificate-authority-data': 'QQ==QQ==' })),
    ]),
    resolve(
      'bad CA data in a provider that is not chosen is refused (Go decodes the whole profile)',
      file(provider()),
      [
        profileOf({
          accessProviders: [
            { name: 'p', cluster: cluster() },
            { name: 'q', cluster: cluster({ 'certificate-authority-data': '-_-_' }) },
          ],
        }),
      ],
    ),
    resolve(
      'proxy-url is carried',
      file(provider()),
      [onCluster(cluster({ 'proxy-url': 'http://user:pw@proxy.example:3128' }))],
      ['exec-info-config-null'],
    ),
    resolve('no proxy-url: no proxy', file(provider({}, { provideClusterInfo: false })), [onCluster(cluster())]),
    // Listed differences.
    resolve(
      'tls-server-name, insecure-skip-tls-verify (allowed by the providers file, a field upstream ignores), disable-compression are carried',
      file(provider({ allowInsecureSkipTLSVerify: true })),
      [
        onCluster(
          cluster({ 'tls-server-name': 'api.internal', 'insecure-skip-tls-verify': true, 'disable-compression': true }),
        ),
      ],
      ['tls-fields-carried', 'exec-info-config-null'],
    ),
    resolve(
      'insecure-skip-tls-verify: true without the providers file’s leave is refused; upstream drops it',
      file(provider()),
      [onCluster(cluster({ 'insecure-skip-tls-verify': true }))],
      ['insecure-refused'],
    ),
    resolve(
      'NODE_OPTIONS from a profile is refused; upstream hands it to the plugin',
      file(appendEnv),
      [withExt(ext(ENVS, { NODE_OPTIONS: '--require=/tmp/x.js', OK: 'fine' }))],
      ['env-denied'],
    ),
    resolve(
      'LD_PRELOAD from a profile is refused under Replace',
      file(replaceEnv),
      [withExt(ext(ENVS, { LD_PRELOAD: '/tmp/x.so' }))],
      ['env-denied'],
    ),
    resolve(
      'a name carrying "=" that sets NODE_OPTIONS is refused',
      file(appendEnv),
      [withExt(ext(ENVS, { 'NODE_OPTIONS=--require=/tmp/x.js': '' }))],
      ['env-denied'],
    ),
    resolve(
      'KUBECONFIG from a profile is refused',
      file(appendEnv),
      [withExt(ext(ENVS, { KUBECONFIG: '/tmp/other' }))],
      ['env-denied'],
    ),
    resolve(
      'allowedProfileEnvVars lets NODE_OPTIONS through (upstream ignores the field and passes it anyway)',
      file(provider({ profileSourcedEnvVarsPolicy: 'AppendIfNotExists', allowedProfileEnvVars: ['NODE_OPTIONS'] })),
      [withExt(ext(ENVS, { NODE_OPTIONS: '--max-old-space-size=64' }))],
    ),
    resolve('NODE_OPTIONS under Ignore: both ignore it', file(provider({ profileSourcedEnvVarsPolicy: 'Ignore' })), [
      withExt(ext(ENVS, { NODE_OPTIONS: '--require=/tmp/x.js' })),
    ]),
    resolve(
      'installHint is kept',
      file(provider({}, { installHint: 'brew install cmd' })),
      [withExt(ext(EXEC, {}))],
      ['install-hint-kept'],
    ),
    resolve(
      'a YAML providers file is read',
      `providers:\n  - name: p\n    execConfig:\n      apiVersion: ${V1}\n      command: cmd\n`,
      [withExt(ext(EXEC, {}))],
      ['yaml-providers-file'],
    ),
    resolve(
      'field names of the providers file match exactly',
      JSON.stringify({ Providers: [provider()] }),
      [withExt(ext(EXEC, {}))],
      ['field-name-case'],
    ),
    resolve(
      'a providers file with "providers" twice is refused; upstream takes the last',
      `{"providers": [], "providers": ${JSON.stringify([provider()])}}`,
      [withExt(ext(EXEC, {}))],
      ['duplicate-key-refused'],
    ),
    resolve(
      'a providers entry with "name" twice is refused; upstream takes the last',
      JSON.stringify({ providers: [provider()] }).replace('{"name":"p"', '{"name":"other","name":"p"'),
      [withExt(ext(EXEC, {}))],
      ['duplicate-key-refused'],
    ),
    resolve(
      'an empty command is refused now, upstream fails when it runs the plugin',
      file(provider({}, { command: '' })),
      [withExt()],
      ['validated-earlier'],
    ),
    resolve(
      'an unknown exec apiVersion is refused now, upstream when it builds the client',
      file(provider({}, { apiVersion: 'client.authentication.k8s.io/v1alpha1' })),
      [withExt()],
      ['validated-earlier'],
    ),
    resolve(
      'a bad proxy-url is refused now, upstream when it builds the client',
      file(provider()),
      [onCluster(cluster({ 'proxy-url': 'http://[::1' }))],
      ['validated-earlier'],
    ),
    resolve(
      'a v1alpha1 provider without a cluster is refused',
      file(provider()),
      [profileOf({ accessProviders: [{ name: 'p' }] })],
      ['profile-schema'],
    ),
    resolve(
      'a null in the profile is refused by its schema',
      file(provider()),
      [onCluster(cluster({ 'proxy-url': null }))],
      ['profile-schema'],
    ),
    resolve(
      'no exec extension: upstream hands the plugin "config": null',
      file(provider()),
      [withExt()],
      ['exec-info-config-null'],
    ),
    // Upstream mutates the loaded providers config (shared run) — we never do.
    resolve(
      'Append: args accumulate when the same profile is resolved twice',
      file(appendArgs),
      [withExt(ext(ARGS, ['--cluster=x'])), withExt(ext(ARGS, ['--cluster=x']))],
      ['no-mutation'],
    ),
    resolve(
      'Append: profile x’s args leak into profile y',
      file(appendArgs),
      [withExt(ext(ARGS, ['--cluster=x'])), onCluster(cluster({ extensions: [ext(EXEC, {})] }), 'y')],
      ['no-mutation'],
    ),
    resolve(
      'AppendIfNotExists: profile x’s extra variables leak into profile y',
      file(appendEnv),
      [withExt(ext(ENVS, { X_ONLY: 'x' })), onCluster(cluster({ extensions: [ext(ENVS, {})] }), 'y')],
      ['no-mutation'],
    ),
    resolve(
      'Replace: profile x’s value replaces the file’s for profile y',
      file(replaceEnv),
      [withExt(ext(ENVS, { FILE: 'x' })), onCluster(cluster({ extensions: [ext(ENVS, {})] }), 'y')],
      ['no-mutation'],
    ),

    // Plugin output (client-go's exec decoding).
    output('a token', credential({ token: 'abc' })),
    output('a token with an expiry', credential({ token: 'abc', expirationTimestamp: '2030-01-02T03:04:05Z' })),
    output(
      'a certificate and key',
      credential({ clientCertificateData: pki.alice.cert, clientKeyData: pki.alice.key }),
    ),
    output(
      'a token and a certificate and key',
      credential({ token: 't', clientCertificateData: pki.alice.cert, clientKeyData: pki.alice.key }),
    ),
    output(
      'a key that does not match the certificate is refused',
      credential({ clientCertificateData: pki.alice.cert, clientKeyData: pki.bob.key }),
    ),
    output('only a certificate is refused', credential({ clientCertificateData: pki.alice.cert })),
    output('not PEM is refused', credential({ clientCertificateData: 'x', clientKeyData: 'y' })),
    output('no token and no certificate is refused', credential({ expirationTimestamp: '2030-01-01T00:00:00Z' })),
    output('no status is refused', JSON.stringify({ apiVersion: V1, kind: 'ExecCredential' })),
    output('a null status is refused', credential(null)),
    output('a status of the wrong type is refused', credential('x')),
    output('another apiVersion is refused', credential({ token: 't' }, {}, V1B1)),
    output('v1beta1 configured and returned', credential({ token: 't' }, {}, V1B1), V1B1),
    output('an unknown apiVersion is refused', credential({ token: 't' }, {}, 'client.authentication.k8s.io/v1alpha1')),
    output('no apiVersion is refused', JSON.stringify({ kind: 'ExecCredential', status: { token: 't' } })),
    output(
      'no kind is accepted (client-go takes it from the type it decodes into)',
      JSON.stringify({ apiVersion: V1, status: { token: 't' } }),
    ),
    output('an empty kind is accepted', credential({ token: 't' }, { kind: '' })),
    output('a null kind is accepted', credential({ token: 't' }, { kind: null })),
    output('another kind is refused', credential({ token: 't' }, { kind: 'Secret' })),
    output('a kind of the wrong type is refused', credential({ token: 't' }, { kind: 5 })),
    output('a token of the wrong type is refused', credential({ token: 5 })),
    output(
      'a null token is no token',
      credential({ token: null, clientCertificateData: pki.alice.cert, clientKeyData: pki.alice.key }),
    ),
    output('a spec of the wrong type is refused', credential({ token: 't' }, { spec: 'x' })),
    output(
      'spec.interactive of the wrong type is refused',
      credential({ token: 't' }, { spec: { interactive: 'yes' } }),
    ),
    output(
      'spec.cluster with unpadded CA data is refused',
      credential({ token: 't' }, { spec: { cluster: { server: 'https://x', 'certificate-authority-data': 'QQ' } } }),
    ),
    output(
      'spec.cluster echoed back is accepted',
      credential(
        { token: 't' },
        {
          spec: {
            interactive: false,
            cluster: { server: 'https://x', 'certificate-authority-data': 'QQ==', config: { a: 1 } },
          },
        },
      ),
    ),
    output('JSON with trailing text is refused', `${credential({ token: 't' })} trailing`),
    output('two JSON documents are refused', `${credential({ token: 't' })}\n${credential({ token: 'u' })}`),
    output('JSON after leading whitespace', `  \n\t${credential({ token: 't' })}`),
    output(
      'a YAML flow mapping is read as JSON, and refused',
      `{apiVersion: ${V1}, kind: ExecCredential, status: {token: t}}`,
    ),
    output('YAML', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: from-yaml\n`),
    output(
      'YAML: yes is a boolean (YAML 1.1), refused as a token',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: yes\n`,
    ),
    output('YAML: on is a boolean', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: on\n`),
    output('YAML: a quoted "yes" is a string', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: "yes"\n`),
    output('YAML: a number is refused as a token', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: 0x1f\n`),
    output(
      'YAML: a time-like plain scalar is a string',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: 12:30:45\n`,
    ),
    output(
      'YAML: an unquoted expirationTimestamp is its text',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: t\n  expirationTimestamp: 2030-01-01T00:00:00Z\n`,
    ),
    output('YAML: ~ is no token', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: ~\n`),
    output(
      'YAML: a PEM pair in block scalars',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  clientCertificateData: |\n${indent(pki.alice.cert)}  clientKeyData: |\n${indent(pki.alice.key)}`,
    ),
    output(
      'a YAML stream: the first document is the credential',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: first\n---\nfoo: bar\n`,
    ),
    output(
      'a YAML stream: later documents are not even parsed',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: first\n---\n- garbage: [\n`,
    ),
    output('a YAML stream starting with ---', `---\napiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: t\n`),
    output(
      'a YAML stream whose first document is empty is refused',
      `---\n---\napiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: t\n`,
    ),
    output(
      'YAML: a key listed twice, the last wins',
      `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: first\n  token: last\n`,
    ),
    output(
      'JSON: a key listed twice, the last wins',
      `{"apiVersion":"${V1}","kind":"ExecCredential","status":{"token":"first","token":"last"}}`,
    ),
    output(
      'YAML: a merge key',
      `apiVersion: ${V1}\nkind: ExecCredential\nbase: &b\n  token: merged\nstatus:\n  <<: *b\n`,
    ),
    output('YAML: an explicit !!str tag', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: !!str 123\n`),
    output('YAML: a tab-indented line is refused', `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n\ttoken: t\n`),
    output(
      'YAML anchors and aliases',
      `apiVersion: ${V1}\nkind: ExecCredential\nx: &t aliased\nstatus:\n  token: *t\n`,
    ),
    output('nothing is refused', ''),
    output('whitespace is refused', ' \n'),
    output('null is refused', 'null'),
    output('an array is refused', '[]'),
    output('a bare token is refused', 'eyJhbGciOi.not-an-exec-credential'),
  ];
  // Plain YAML scalars as a token: client-go's YAML 1.1 reader (go.yaml.in/yaml/v2) makes some of them booleans,
  // numbers or null, which are not a string token.
  const scalars = [
    'y',
    'N',
    'yes',
    'No',
    'on',
    'OFF',
    'True',
    'tRUE',
    '~',
    'Null',
    '0',
    '-0',
    '+1',
    '017',
    '08',
    '0o17',
    '0O17',
    '0x1F',
    '0X1F',
    '0b101',
    '-0b1',
    '1_000',
    '1__0',
    '_1',
    '1_',
    '0x_1F',
    '0x',
    '1e3',
    '1E-3',
    '1.',
    '.5',
    '-.5',
    '.',
    '.e3',
    '1e',
    '1e999',
    '.inf',
    '-.Inf',
    '.NaN',
    '0xFFFFFFFFFFFFFFFF',
    '0x1FFFFFFFFFFFFFFFF',
    '-9223372036854775808',
    '-9223372036854775809',
    '18446744073709551615',
    '99999999999999999999',
    '1:20',
    '190:20:30',
    '2001-12-14',
    '2001-12-14t21:59:43.10-05:00',
    '=',
    '<<',
    '0.1.2',
    'plain-token',
  ];
  for (const scalar of scalars) {
    cases.push(
      output(
        `YAML: the plain scalar ${scalar} as a token`,
        `apiVersion: ${V1}\nkind: ExecCredential\nstatus:\n  token: ${scalar}\n`,
      ),
    );
  }
  // expirationTimestamp: what Go's time.Parse(time.RFC3339) takes.
  const timestamps: [string, string][] = [
    ['no zone', '2030-01-01T00:00:00'],
    ['no seconds', '2030-01-01T00:00Z'],
    ['hour 24', '2030-01-01T24:00:00Z'],
    ['February 30', '2030-02-30T00:00:00Z'],
    ['February 29 of a common year', '2030-02-29T00:00:00Z'],
    ['February 29 of a leap year', '2028-02-29T00:00:00Z'],
    ['February 29 of 1900', '1900-02-29T00:00:00Z'],
    ['February 29 of 2000', '2000-02-29T00:00:00Z'],
    ['April 31', '2030-04-31T00:00:00Z'],
    ['month 13', '2030-13-01T00:00:00Z'],
    ['month 0', '2030-00-01T00:00:00Z'],
    ['day 0', '2030-01-00T00:00:00Z'],
    ['minute 60', '2030-01-01T00:60:00Z'],
    ['a leap second', '2030-12-31T23:59:60Z'],
    ['+0100', '2030-01-01T00:00:00+0100'],
    ['+01:00', '2030-01-01T01:00:00+01:00'],
    ['-00:00', '2030-01-01T00:00:00-00:00'],
    ['+24:00 (Go tolerates it)', '2030-01-01T00:00:00+24:00'],
    ['+01:60 (Go tolerates it)', '2030-01-01T00:00:00+01:60'],
    ['+25:00', '2030-01-01T00:00:00+25:00'],
    ['+01:61', '2030-01-01T00:00:00+01:61'],
    ['lowercase t', '2030-01-01t00:00:00Z'],
    ['lowercase z', '2030-01-01T00:00:00z'],
    ['a space for T', '2030-01-01 00:00:00Z'],
    ['a fraction', '2030-01-01T00:00:00.123456789Z'],
    ['a long fraction', '2030-01-01T00:00:00.1234567891234Z'],
    ['a comma fraction', '2030-01-01T00:00:00,5Z'],
    ['an empty fraction', '2030-01-01T00:00:00.Z'],
    ['a one-digit hour (Go takes it)', '2030-01-01T1:00:00Z'],
    ['a one-digit minute', '2030-01-01T01:0:00Z'],
    ['year 0000', '0000-01-01T00:00:00Z'],
    ['a five-digit year', '10000-01-01T00:00:00Z'],
    ['a signed year', '+2030-01-01T00:00:00Z'],
    ['just before the epoch', '1969-12-31T23:59:59.9999Z'],
    ['trailing space', '2030-01-01T00:00:00Z '],
    ['leading space', ' 2030-01-01T00:00:00Z'],
    ['a date only', '2030-01-01'],
    ['empty', ''],
    ['a unix time', '1893456000'],
  ];
  for (const [name, timestamp] of timestamps) {
    cases.push(output(`expirationTimestamp: ${name}`, credential({ token: 't', expirationTimestamp: timestamp })));
  }
  return cases;
}

function indent(pem: string): string {
  return pem
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}\n`)
    .join('');
}

/** mulberry32: a small seeded PRNG, enough to replay a run from its seed. */
export class Random {
  #state: number;
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }
}

const NAMES = ['a', 'b', 'c'];
const ENV_NAMES = ['FILE', 'TOKEN_PATH', 'AUDIENCE', 'X', 'lower', 'A=B', '', 'MY.VAR', 'NODE_OPTIONS', 'PATH'];
const ATOMS = [
  'a',
  'b',
  'z',
  '--flag',
  '--cluster=x',
  'value',
  '1',
  ' ',
  '=',
  '"',
  '\\',
  '<',
  '&',
  'é',
  '\u{1f600}',
  '\n',
  '\t',
  '\u0001',
  '\u0085',
  '\u0080',
  '\u007f',
  '\u2028',
  '\ufeff',
  'true',
  'null',
];

function text(r: Random): string {
  let out = '';
  const parts = r.int(0, 3);
  for (let i = 0; i < parts; i++)
    out += r.chance(0.8) ? r.pick(['a', 'b', 'x', 'value', '--v', 'https://x']) : r.pick(ATOMS);
  return out;
}

function item(r: Random): Json {
  const roll = r.next();
  if (roll < 0.78) return text(r);
  if (roll < 0.85) return r.pick([0, 1, -1, 1.5, 1e21, 8080]);
  if (roll < 0.9) return r.chance(0.5);
  if (roll < 0.96) return null;
  return r.chance(0.5) ? { nested: 'x' } : ['nested'];
}

function argsPayload(r: Random): Json {
  const roll = r.next();
  if (roll < 0.75) return Array.from({ length: r.int(0, 3) }, () => item(r));
  if (roll < 0.85) return null;
  return r.pick<Json>(['--single', 5, { a: 'b' }, true]);
}

function envsPayload(r: Random, fileNames: string[]): Json {
  const roll = r.next();
  if (roll < 0.75) {
    const payload: Record<string, Json> = {};
    for (let i = r.int(0, 3); i > 0; i--) {
      const name = r.chance(0.05)
        ? 'K'.repeat(r.int(1019, 1026))
        : r.chance(0.4) && fileNames.length > 0
          ? r.pick(fileNames)
          : r.pick(ENV_NAMES);
      payload[name] = item(r);
    }
    return payload;
  }
  if (roll < 0.85) return null;
  return r.pick<Json>([['A=b'], 'A=b', 7, []]);
}

function caData(r: Random, pki: Pki): string | undefined {
  const roll = r.next();
  if (roll < 0.4) return undefined;
  if (roll < 0.6) return pki.caBase64;
  if (roll < 0.7) return `${(pki.caBase64.match(/.{1,76}/g) ?? []).join('\r\n')}\n`;
  if (roll < 0.78) return 'QUJD';
  if (roll < 0.86) return pki.caBase64.replace(/=+$/, '') || 'QQ';
  if (roll < 0.92) return 'QR==';
  return r.pick(['QU JD', 'QQ==QQ==', '-_-_', '']);
}

function randomCluster(r: Random, pki: Pki, fileNames: string[], name: string): Record<string, Json> {
  const c: Record<string, Json> = {
    server: r.pick(['https://api.example:6443', 'https://10.0.0.1', 'http://127.0.0.1:8080']),
  };
  const ca = caData(r, pki);
  if (ca !== undefined) c['certificate-authority-data'] = ca;
  if (r.chance(0.15))
    c['proxy-url'] = r.pick([
      'http://proxy:3128',
      'socks5://proxy:1080',
      'https://user:pw@proxy.example',
      'http://[::1',
    ]);
  if (r.chance(0.1)) c['tls-server-name'] = 'api.internal';
  if (r.chance(0.1)) c['insecure-skip-tls-verify'] = r.chance(0.5);
  if (r.chance(0.1)) c['disable-compression'] = r.chance(0.5);
  if (r.chance(0.05)) c['certificate-authority'] = '/etc/ca.crt';
  const extensions: Json[] = [];
  for (let i = r.int(0, 4); i > 0; i--) {
    const roll = r.next();
    if (roll < 0.1 && extensions.length > 0) {
      // The same name again.
      const previous = r.pick(extensions) as { name: string };
      extensions.push(ext(previous.name, r.chance(0.5) ? null : { again: true }));
    } else if (roll < 0.4) extensions.push(ext(ARGS, argsPayload(r)));
    else if (roll < 0.7) extensions.push(ext(ENVS, envsPayload(r, fileNames)));
    else if (roll < 0.9)
      extensions.push(
        ext(
          EXEC,
          r.chance(0.85) ? { cluster: name, audience: text(r), n: r.int(0, 9) } : r.pick<Json>([null, 'str', 3]),
        ),
      );
    else extensions.push(ext('example.com/other', { any: text(r) }));
  }
  if (extensions.length > 0 || r.chance(0.5)) c.extensions = extensions;
  return c;
}

function randomProvidersFile(r: Random): { text: string; entries: Record<string, Json>[] } {
  const entries: Record<string, Json>[] = [];
  for (let i = r.int(1, 3); i > 0; i--) {
    const entry: Record<string, Json> = { name: r.pick(NAMES) };
    if (r.chance(0.92)) {
      const exec: Record<string, Json> = {
        command: r.pick(['cmd', 'cmd', 'cmd', 'cmd', 'cmd', '/opt/bin/plugin', '']),
      };
      const apiVersion = r.pick([V1, V1, V1, V1B1, V1B1, 'client.authentication.k8s.io/v1alpha1', undefined]);
      if (apiVersion !== undefined) exec.apiVersion = apiVersion;
      if (r.chance(0.6)) exec.args = Array.from({ length: r.int(0, 3) }, () => (r.chance(0.05) ? null : text(r)));
      if (r.chance(0.6)) {
        exec.env = Array.from({ length: r.int(0, 3) }, () => ({ name: r.pick(ENV_NAMES.slice(0, 5)), value: text(r) }));
      }
      if (r.chance(0.25)) exec.installHint = r.pick(['install it', '']);
      if (r.chance(0.8)) exec.provideClusterInfo = r.chance(0.85);
      if (r.chance(0.1)) exec.interactiveMode = r.pick(['Never', 'Always', 'IfAvailable']);
      entry.execConfig = exec;
    }
    const args = r.pick(['', 'Append', 'Append', 'Append', 'Ignore', 'Prepend', undefined, undefined]);
    if (args !== undefined) entry.profileSourcedCLIArgsPolicy = args;
    const envs = r.pick([
      '',
      'AppendIfNotExists',
      'AppendIfNotExists',
      'Replace',
      'Replace',
      'Ignore',
      'Merge',
      undefined,
      undefined,
    ]);
    if (envs !== undefined) entry.profileSourcedEnvVarsPolicy = envs;
    // Fields of ours that upstream's reader ignores.
    if (r.chance(0.1)) entry.allowedProfileEnvVars = r.pick([['NODE_OPTIONS'], ['path'], []]);
    if (r.chance(0.1)) entry.allowInsecureSkipTLSVerify = r.chance(0.5);
    entries.push(entry);
  }
  return { text: JSON.stringify({ providers: entries }), entries };
}

function randomResolveCase(r: Random, pki: Pki, index: number): ResolveCase {
  const { text: providersFile, entries } = randomProvidersFile(r);
  const fileNames = entries.flatMap((entry) =>
    ((entry.execConfig as { env?: { name: string }[] } | undefined)?.env ?? []).map((v) => v.name),
  );
  const profiles: Json[] = [];
  for (let p = r.chance(0.4) ? 2 : 1; p > 0; p--) {
    const name = `spoke-${index}-${p}`;
    const apiVersion = r.chance(0.7) ? 'multicluster.x-k8s.io/v1alpha1' : 'multicluster.x-k8s.io/v1alpha2';
    const providers = Array.from({ length: r.int(1, 2) }, () => ({
      name: r.pick(NAMES),
      cluster: randomCluster(r, pki, fileNames, name),
    }));
    // A name listed twice in one list: keep the first (the CRD's list is a map keyed by name).
    const unique = providers.filter(
      (provider, i) => providers.findIndex((other) => other.name === provider.name) === i,
    );
    const status: Record<string, Json> = { accessProviders: unique };
    if (apiVersion.endsWith('v1alpha1') && r.chance(0.15)) {
      status.credentialProviders = [{ name: r.pick(NAMES), cluster: randomCluster(r, pki, fileNames, name) }];
    }
    profiles.push(profileOf(status, name, apiVersion));
  }
  return { kind: 'resolve', name: `random resolve #${index}`, providersFile, profiles };
}

/** A timestamp that is valid about half of the time, with the mistakes plugins make. */
function timestamp(r: Random): string {
  const valid = r.chance(0.5);
  const year = r.pick(['2030', '2028', '2000', '1900', '1999', '0000', '9999']);
  const month = valid ? r.int(1, 12) : r.int(0, 13);
  const day = valid ? r.int(1, 28) : r.int(0, 31);
  const hour = valid ? r.int(0, 23) : r.int(0, 24);
  const minute = valid ? r.int(0, 59) : r.int(0, 60);
  const second = valid ? r.int(0, 59) : r.int(0, 60);
  const pad = (n: number) => String(n).padStart(2, '0');
  const fraction = r.chance(0.3) ? r.pick(['.5', '.123', '.123456789', '.1234567891234', ',25', '.']) : '';
  const zone = valid
    ? r.pick(['Z', '+01:00', '-05:30', '+00:00', '+24:00', '+01:60'])
    : r.pick(['Z', 'z', '', '+0100', '+25:00', '+01:61', '+1:00']);
  const separator = valid || r.chance(0.6) ? 'T' : r.pick(['t', ' ']);
  const seconds = valid || r.chance(0.7) ? `:${pad(second)}${valid || r.chance(0.7) ? fraction : '.'}` : '';
  return `${year}-${pad(month)}-${pad(day)}${separator}${pad(hour)}:${pad(minute)}${seconds}${zone}`;
}

const YAML_TOKENS = [
  'plain-token',
  'yes',
  'no',
  'on',
  'off',
  'y',
  'true',
  'null',
  '~',
  '123',
  '0x1f',
  '1e3',
  '12:30',
  '0o17',
  'tRUE',
  '2030-01-01',
];

function yamlValue(r: Random, value: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._:-]*$/.test(value) && r.chance(0.6) ? value : JSON.stringify(value);
}

function randomOutputCase(r: Random, pki: Pki, index: number): OutputCase {
  const apiVersion = r.chance(0.7) ? V1 : V1B1;
  const doc: Record<string, Json> = {};
  const docVersion = r.next();
  if (docVersion < 0.85) doc.apiVersion = apiVersion;
  else if (docVersion < 0.93) doc.apiVersion = apiVersion === V1 ? V1B1 : V1;
  else if (docVersion < 0.97) doc.apiVersion = 'client.authentication.k8s.io/v1alpha1';
  const kind = r.next();
  if (kind < 0.85) doc.kind = 'ExecCredential';
  else if (kind < 0.9) doc.kind = '';
  else if (kind < 0.95) doc.kind = 'Other';
  const status: Record<string, Json> = {};
  const yaml = r.chance(0.3);
  if (r.chance(0.7))
    status.token = yaml && r.chance(0.5) ? r.pick(YAML_TOKENS) : r.pick([`tok-${index}`, '', 'eyJ.a.b']);
  const pair = r.next();
  if (pair < 0.2) {
    status.clientCertificateData = pki.alice.cert;
    status.clientKeyData = pki.alice.key;
  } else if (pair < 0.25) {
    status.clientCertificateData = pki.alice.cert;
    status.clientKeyData = pki.bob.key;
  } else if (pair < 0.3) {
    status[r.chance(0.5) ? 'clientCertificateData' : 'clientKeyData'] = pki.alice.cert;
  }
  if (r.chance(0.6)) status.expirationTimestamp = timestamp(r);
  if (r.chance(0.95)) doc.status = r.chance(0.97) ? status : null;
  let stdout: string;
  if (!yaml) {
    stdout = JSON.stringify(doc, null, r.chance(0.3) ? 2 : undefined);
    if (r.chance(0.05)) stdout += r.pick([' trailing', '\n{}', '\n']);
  } else if (r.chance(0.1)) {
    // Flow style: client-go reads it as JSON.
    stdout = `{apiVersion: ${doc.apiVersion ?? V1}, kind: ExecCredential, status: {token: x}}`;
  } else {
    const lines: string[] = [];
    if (doc.apiVersion !== undefined) lines.push(`apiVersion: ${String(doc.apiVersion)}`);
    if (doc.kind !== undefined) lines.push(`kind: ${doc.kind === '' ? '""' : String(doc.kind)}`);
    if (doc.status === null) lines.push('status: null');
    else if (doc.status !== undefined) {
      lines.push('status:');
      for (const [key, value] of Object.entries(status)) {
        const v = value as string;
        lines.push(v.includes('\n') ? `  ${key}: |\n${indent(v).trimEnd()}` : `  ${key}: ${yamlValue(r, v)}`);
      }
      if (Object.keys(status).length === 0) lines[lines.length - 1] = 'status: {}';
    }
    stdout = `${r.chance(0.1) ? '---\n' : ''}${lines.join('\n')}\n${r.chance(0.1) ? '---\nother: document\n' : ''}`;
  }
  return { kind: 'output', name: `random output #${index}`, apiVersion, stdout };
}

/** `count` mixed cases from `seed`: about two thirds resolve, one third plugin output. */
export function randomCases(seed: number, count: number, pki: Pki): Case[] {
  const r = new Random(seed);
  const cases: Case[] = [];
  for (let index = 0; index < count; index++) {
    cases.push(r.chance(0.65) ? randomResolveCase(r, pki, index) : randomOutputCase(r, pki, index));
  }
  return cases;
}
