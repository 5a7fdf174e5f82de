import { describe, expect, it } from 'vitest';
import { resolveClusterAccess } from '../../src/resolve/cluster-access.js';
import type { AccessConfig, ClusterProfile, ProviderConfig } from '../../src/resolve/types.js';
import {
  ARGS_EXT,
  CA_DATA,
  ENVS_EXT,
  EXEC_EXT,
  buildProfile,
  deepFreeze,
  lookupProfile,
  objectsOf,
  profile,
  upstreamProviders,
} from '../helpers/library-fixtures.js';

const V1 = 'client.authentication.k8s.io/v1' as const;

function catProvider(
  overrides: Partial<ProviderConfig> = {},
  env = [{ name: 'CLIENT_ID', value: 'None' }],
): AccessConfig {
  return {
    providers: [
      {
        name: 'test-provider-1',
        execConfig: { apiVersion: V1, command: 'cat', args: ['/tmp/cred.json'], env },
        ...overrides,
      },
    ],
  };
}

function codeOf(action: () => unknown): { code: string; message: string; path: string | undefined } {
  try {
    action();
  } catch (error) {
    const e = error as { code: string; message: string; path: string | undefined };
    return { code: e.code, message: e.message, path: e.path };
  }
  throw new Error('expected an error');
}

describe('resolveClusterAccess: provider lookup (upstream getExecConfigAndFlagsFromConfig / getClusterAccessorFromClusterProfile)', () => {
  it('returns the exec config of an existing provider with Ignore/Ignore defaults (extensions untouched)', () => {
    const p = profile({
      accessProviders: [
        {
          name: 'test-provider-1',
          cluster: {
            server: 'https://a',
            extensions: [
              { name: ARGS_EXT, extension: ['--x'] },
              { name: ENVS_EXT, extension: { A: 'b' } },
            ],
          },
        },
      ],
    });
    const access = resolveClusterAccess(p, upstreamProviders());
    expect(access.providerName).toBe('test-provider-1');
    expect(access.exec.command).toBe('test-command-1');
    expect(access.exec.args).toEqual(['arg1', 'arg2']);
    expect(access.exec.env).toEqual([]);
  });

  it('returns another provider with its Append/Replace policies applied', () => {
    const p = profile({
      accessProviders: [
        {
          name: 'test-provider-2',
          cluster: {
            server: 'https://b',
            extensions: [
              { name: ARGS_EXT, extension: ['--x'] },
              { name: ENVS_EXT, extension: { A: 'b' } },
            ],
          },
        },
      ],
    });
    const access = resolveClusterAccess(p, upstreamProviders());
    expect(access.providerName).toBe('test-provider-2');
    expect(access.exec.command).toBe('test-command-2');
    expect(access.exec.args).toEqual(['arg3', '--x']);
    expect(access.exec.env).toEqual([{ name: 'A', value: 'b' }]);
  });

  it('finds nothing for a provider name the file does not list', () => {
    const p = profile({ accessProviders: [{ name: 'non-existent-provider', cluster: { server: 'https://a' } }] });
    expect(codeOf(() => resolveClusterAccess(p, upstreamProviders())).code).toBe('ERR_NO_MATCHING_PROVIDER');
  });

  it('finds nothing for an empty provider name', () => {
    const p = profile({ accessProviders: [{ name: '', cluster: { server: 'https://a' } }] });
    expect(codeOf(() => resolveClusterAccess(p, upstreamProviders())).code).toBe('ERR_NO_MATCHING_PROVIDER');
  });

  it('finds nothing with an empty providers list, or none at all (upstream New([]) / New(nil))', () => {
    expect(codeOf(() => resolveClusterAccess(lookupProfile(), { providers: [] })).code).toBe(
      'ERR_NO_MATCHING_PROVIDER',
    );
    expect(codeOf(() => resolveClusterAccess(lookupProfile(), {} as AccessConfig)).code).toBe(
      'ERR_NO_MATCHING_PROVIDER',
    );
  });

  it('chooses the first matching provider', () => {
    const access = resolveClusterAccess(lookupProfile(), upstreamProviders());
    expect(access.providerName).toBe('test-provider-1');
    expect(access.cluster.server).toBe('https://test-server-1.com');
  });

  it('chooses by providers-file order, not profile order', () => {
    const file = upstreamProviders();
    const reversed: AccessConfig = { providers: [file.providers[1]!, file.providers[0]!] };
    const access = resolveClusterAccess(lookupProfile(), reversed);
    expect(access.providerName).toBe('test-provider-2');
    expect(access.cluster.server).toBe('https://test-server-2.com');
  });

  it('reports no match with the upstream text, a stable code and both name lists', () => {
    const mismatched: AccessConfig = {
      providers: [{ name: 'different-provider', execConfig: { apiVersion: V1, command: 'cmd' } }],
    };
    let caught: unknown;
    try {
      resolveClusterAccess(lookupProfile(), mismatched);
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({
      code: 'ERR_NO_MATCHING_PROVIDER',
      message: 'no matching cluster accessor found for cluster profile "test-cluster"',
    });
    expect((caught as { hint: string }).hint).toContain('"unsupported-provider"');
    expect((caught as { hint: string }).hint).toContain('"different-provider"');
  });

  it('reports no match for a profile without providers', () => {
    const empty = profile({}, 'empty-cluster');
    expect(codeOf(() => resolveClusterAccess(empty, upstreamProviders()))).toMatchObject({
      code: 'ERR_NO_MATCHING_PROVIDER',
      message: 'no matching cluster accessor found for cluster profile "empty-cluster"',
    });
    const noStatus = { ...profile(undefined), status: undefined } as ClusterProfile;
    delete (noStatus as { status?: unknown }).status;
    expect(codeOf(() => resolveClusterAccess(noStatus, upstreamProviders())).code).toBe('ERR_NO_MATCHING_PROVIDER');
  });

  it('returns a deep copy: changing the profile afterwards does not change the result', () => {
    const p = buildProfile();
    const access = resolveClusterAccess(p, catProvider({ profileSourcedCLIArgsPolicy: 'Append' }));
    p.status!.accessProviders![0]!.cluster!.server = 'modified-server';
    (p.status!.accessProviders![0]!.cluster!.extensions![0]!.extension as { clusterName: string }).clusterName =
      'changed';
    expect(access.cluster.server).toBe('https://test-server.com');
    expect(access.cluster.config).toEqual({ clusterName: 'spoke-1', audience: 'spoke' });
  });
});

describe('resolveClusterAccess: credentialProviders (deprecated) and accessProviders', () => {
  it('prefers accessProviders on a name clash and warns once per credentialProviders entry through the callback', () => {
    const p = profile({
      credentialProviders: [
        { name: 'test-provider-1', cluster: { server: 'https://old' } },
        { name: 'legacy', cluster: { server: 'https://legacy' } },
      ],
      accessProviders: [{ name: 'test-provider-1', cluster: { server: 'https://new' } }],
    });
    const warnings: string[] = [];
    const access = resolveClusterAccess(p, upstreamProviders(), { warn: (m) => warnings.push(m) });
    expect(access.cluster.server).toBe('https://new');
    expect(warnings).toEqual([
      'ClusterProfile "test-cluster" uses deprecated field CredentialProviders "test-provider-1"; please migrate to AccessProviders',
      'ClusterProfile "test-cluster" uses deprecated field CredentialProviders "legacy"; please migrate to AccessProviders',
    ]);
  });

  it('uses a provider listed only in credentialProviders; without a callback nothing is printed', () => {
    const p = profile({ credentialProviders: [{ name: 'test-provider-2', cluster: { server: 'https://cred' } }] });
    const access = resolveClusterAccess(p, upstreamProviders());
    expect(access.providerName).toBe('test-provider-2');
    expect(access.cluster.server).toBe('https://cred');
  });

  it('names the credentialProviders path in extension errors of a provider found there', () => {
    const p = profile({
      credentialProviders: [
        {
          name: 'test-provider-1',
          cluster: { server: 'https://cred', extensions: [{ name: ARGS_EXT, extension: 'not-a-list' }] },
        },
      ],
    });
    expect(codeOf(() => resolveClusterAccess(p, catProvider({ profileSourcedCLIArgsPolicy: 'Append' })))).toMatchObject(
      {
        code: 'ERR_EXTENSION_INVALID',
        path: '$.status.credentialProviders[0].cluster.extensions[0].extension',
      },
    );
  });
});

describe('resolveClusterAccess: BuildConfigFromCP', () => {
  it('errors when no provider matches', () => {
    const mismatched: AccessConfig = {
      providers: [{ name: 'different-provider', execConfig: { apiVersion: V1, command: 'cmd' } }],
    };
    expect(codeOf(() => resolveClusterAccess(buildProfile(), mismatched)).message).toContain(
      'no matching cluster accessor found for cluster profile',
    );
  });

  it('errors when the matching provider has no exec config, naming its path', () => {
    expect(
      codeOf(() =>
        resolveClusterAccess(buildProfile(), {
          providers: [{ name: 'x', execConfig: { apiVersion: V1, command: 'c' } }, { name: 'test-provider-1' }],
        }),
      ),
    ).toEqual({
      code: 'ERR_NO_EXEC_CONFIG',
      message: 'no exec config found for provider "test-provider-1"',
      path: '$.providers[1].execConfig',
    });
  });

  it('errors, instead of crashing, when the chosen v1alpha1 provider has no cluster (upstream allows the entry)', () => {
    const p = profile({
      accessProviders: [{ name: 'other', cluster: { server: 'https://a' } }, { name: 'test-provider-1' }],
    });
    expect(codeOf(() => resolveClusterAccess(p, upstreamProviders()))).toEqual({
      code: 'ERR_PROFILE_INVALID',
      message: 'access provider "test-provider-1" of ClusterProfile "test-cluster" has no cluster to connect to',
      path: '$.status.accessProviders[1].cluster',
    });
  });

  it('refuses a chosen cluster whose server is empty, as KubeFleet writes it before the entry point is known', () => {
    const p = profile({
      accessProviders: [
        { name: 'other', cluster: { server: '' } },
        { name: 'test-provider-1', cluster: { server: '' } },
      ],
    });
    expect(codeOf(() => resolveClusterAccess(p, upstreamProviders()))).toEqual({
      code: 'ERR_PROFILE_INVALID',
      message: 'access provider "test-provider-1" of ClusterProfile "test-cluster" has no server',
      path: '$.status.accessProviders[1].cluster.server',
    });
  });

  it('checks the chosen exec config as client-go would, naming the path; other entries are not its business', () => {
    const file = {
      providers: [{ name: 'test-provider-1', execConfig: { apiVersion: V1, command: '' } }],
    } as AccessConfig;
    expect(codeOf(() => resolveClusterAccess(buildProfile(), file))).toMatchObject({
      code: 'ERR_EXEC_CONFIG_INVALID',
      path: '$.providers[0].execConfig.command',
    });
    const noVersion = {
      providers: [{ name: 'test-provider-1', execConfig: { command: 'c' } }],
    } as unknown as AccessConfig;
    const error = codeOf(() => resolveClusterAccess(buildProfile(), noVersion));
    expect(error).toMatchObject({ code: 'ERR_EXEC_CONFIG_INVALID', path: '$.providers[0].execConfig.apiVersion' });
    expect(error.message).toContain('apiVersion must be specified to use exec authentication plugin');
    const otherBroken = {
      providers: [{ name: 'unused', execConfig: { command: '' } }, ...catProvider().providers],
    } as unknown as AccessConfig;
    expect(resolveClusterAccess(buildProfile(), otherBroken).exec.command).toBe('cat');
  });

  it('builds the config with default policies: extensions ignored, file env kept', () => {
    const access = resolveClusterAccess(buildProfile(), catProvider({}, [{ name: 'foo', value: 'bar' }]));
    expect(access.cluster.server).toBe('https://test-server.com');
    expect(access.cluster['certificate-authority-data']).toBe(CA_DATA);
    expect(access.cluster['proxy-url']).toBe('http://proxy.example.com');
    expect(access.exec.command).toBe('cat');
    expect(access.exec.args).toEqual(['/tmp/cred.json']);
    expect(access.exec.env).toEqual([{ name: 'foo', value: 'bar' }]);
  });

  it('Append + Replace: args appended, CLIENT_ID from the extension, TENANT_ID added', () => {
    const access = resolveClusterAccess(
      buildProfile(),
      catProvider({ profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'Replace' }),
    );
    expect(access.exec.args).toEqual(['/tmp/cred.json', '--audience', 'audience']);
    expect(access.exec.env).toEqual([
      { name: 'CLIENT_ID', value: 'client-id' },
      { name: 'TENANT_ID', value: 'tenant-id' },
    ]);
  });

  it('Append + AppendIfNotExists: CLIENT_ID from the file, TENANT_ID added', () => {
    const access = resolveClusterAccess(
      buildProfile(),
      catProvider({ profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }),
    );
    expect(access.exec.args).toEqual(['/tmp/cred.json', '--audience', 'audience']);
    expect(access.exec.env).toEqual([
      { name: 'CLIENT_ID', value: 'None' },
      { name: 'TENANT_ID', value: 'tenant-id' },
    ]);
  });

  it('explicit Ignore/Ignore: args and env unchanged', () => {
    const access = resolveClusterAccess(
      buildProfile(),
      catProvider({ profileSourcedCLIArgsPolicy: 'Ignore', profileSourcedEnvVarsPolicy: 'Ignore' }),
    );
    expect(access.exec.args).toEqual(['/tmp/cred.json']);
    expect(access.exec.env).toEqual([{ name: 'CLIENT_ID', value: 'None' }]);
  });

  it('empty-string policies behave like Ignore', () => {
    const access = resolveClusterAccess(
      buildProfile(),
      catProvider({ profileSourcedCLIArgsPolicy: '', profileSourcedEnvVarsPolicy: '' }),
    );
    expect(access.exec.args).toEqual(['/tmp/cred.json']);
    expect(access.exec.env).toEqual([{ name: 'CLIENT_ID', value: 'None' }]);
  });
});

describe('resolveClusterAccess: the result', () => {
  it('passes the exec extension as cluster.config and forces interactiveMode to Never', () => {
    const file: AccessConfig = {
      providers: [
        {
          name: 'test-provider-1',
          execConfig: {
            apiVersion: V1,
            command: 'p',
            provideClusterInfo: true,
            interactiveMode: 'Always',
            installHint: 'install p',
          },
        },
      ],
    };
    const access = resolveClusterAccess(buildProfile(), file);
    expect(access.cluster.config).toEqual({ clusterName: 'spoke-1', audience: 'spoke' });
    expect(access.exec).toEqual({
      apiVersion: V1,
      command: 'p',
      args: [],
      env: [],
      provideClusterInfo: true,
      interactiveMode: 'Never',
      installHint: 'install p',
    });
  });

  it('has no cluster.config when the exec extension is absent, and provideClusterInfo false by default', () => {
    const access = resolveClusterAccess(lookupProfile(), upstreamProviders());
    expect('config' in access.cluster).toBe(false);
    expect(access.exec.provideClusterInfo).toBe(false);
    expect(access.exec.interactiveMode).toBe('Never');
  });

  it('carries server, CA data, tls-server-name, insecure-skip-tls-verify, proxy-url, disable-compression; ignores certificate-authority', () => {
    const p = profile(
      {
        accessProviders: [
          {
            name: 'test-provider-1',
            cluster: {
              server: 'https://10.0.0.3:6443',
              'certificate-authority': '/etc/producer/ca.crt',
              'certificate-authority-data': CA_DATA,
              'tls-server-name': 'api.spoke-1.internal',
              'insecure-skip-tls-verify': false,
              'proxy-url': 'socks5://proxy:1080',
              'disable-compression': true,
            },
          },
        ],
      },
      'spoke-1',
      'fleet',
    );
    const access = resolveClusterAccess(p, upstreamProviders());
    expect(access.cluster).toEqual({
      server: 'https://10.0.0.3:6443',
      'certificate-authority-data': CA_DATA,
      'tls-server-name': 'api.spoke-1.internal',
      'insecure-skip-tls-verify': false,
      'proxy-url': 'socks5://proxy:1080',
      'disable-compression': true,
    });
    expect(access.profile).toEqual({ namespace: 'fleet', name: 'spoke-1' });
  });

  it('refuses certificate-authority-data Go cannot decode, in any provider of the profile, and carries it as Go re-encodes it', () => {
    const withCa = (data: string, chosen = true) =>
      profile({
        accessProviders: [
          {
            name: 'test-provider-1',
            cluster: { server: 'https://a', ...(chosen ? { 'certificate-authority-data': data } : {}) },
          },
          {
            name: 'other',
            cluster: { server: 'https://b', ...(chosen ? {} : { 'certificate-authority-data': data }) },
          },
        ],
      });
    for (const bad of ['QQ', 'QQ=', 'QU JD', 'QQ==QQ==', '-_-_']) {
      expect(codeOf(() => resolveClusterAccess(withCa(bad), upstreamProviders()))).toMatchObject({
        code: 'ERR_PROFILE_INVALID',
        path: "$.status.accessProviders[0].cluster['certificate-authority-data']",
      });
      expect(codeOf(() => resolveClusterAccess(withCa(bad, false), upstreamProviders())).path).toBe(
        "$.status.accessProviders[1].cluster['certificate-authority-data']",
      );
    }
    expect(
      resolveClusterAccess(withCa('QUJD\r\nRA==\n'), upstreamProviders()).cluster['certificate-authority-data'],
    ).toBe('QUJDRA==');
    expect(resolveClusterAccess(withCa('QR=='), upstreamProviders()).cluster['certificate-authority-data']).toBe(
      'QQ==',
    );
  });

  it('refuses a proxy-url that does not parse, without echoing its password', () => {
    const p = profile({
      accessProviders: [
        { name: 'test-provider-1', cluster: { server: 'https://a', 'proxy-url': 'http://user:s3cret@[::1' } },
      ],
    });
    const error = codeOf(() => resolveClusterAccess(p, upstreamProviders()));
    expect(error).toMatchObject({
      code: 'ERR_PROFILE_INVALID',
      path: "$.status.accessProviders[0].cluster['proxy-url']",
    });
    expect(error.message).not.toContain('s3cret');
  });

  it('never mutates inputs: deep-frozen inputs, two calls, deep-equal results sharing no object with inputs or each other', () => {
    const p = deepFreeze(buildProfile());
    const file = deepFreeze(
      catProvider({ profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'Replace' }),
    );
    const first = resolveClusterAccess(p, file);
    const second = resolveClusterAccess(p, file);
    expect(second).toEqual(first);
    // Upstream's Append accumulated args on every call; ours stays put.
    expect(second.exec.args).toEqual(['/tmp/cred.json', '--audience', 'audience']);
    const inputs = objectsOf([p, file]);
    const firstObjects = objectsOf(first);
    for (const object of objectsOf(second)) {
      expect(inputs.has(object)).toBe(false);
      expect(firstObjects.has(object)).toBe(false);
    }
    for (const object of firstObjects) expect(inputs.has(object)).toBe(false);
  });

  it('orders env deterministically: file order, then new extension keys sorted, whatever the extension key order', () => {
    const file = catProvider({ profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }, [
      { name: 'Z_FILE', value: '1' },
      { name: 'A_FILE', value: '2' },
    ]);
    const a = profile({
      accessProviders: [
        {
          name: 'test-provider-1',
          cluster: {
            server: 'https://a',
            extensions: [{ name: ENVS_EXT, extension: { M: 'm', B: 'b', Z_FILE: 'ext' } }],
          },
        },
      ],
    });
    const b = profile({
      accessProviders: [
        {
          name: 'test-provider-1',
          cluster: {
            server: 'https://a',
            extensions: [{ name: ENVS_EXT, extension: { Z_FILE: 'ext', B: 'b', M: 'm' } }],
          },
        },
      ],
    });
    const expected = [
      { name: 'Z_FILE', value: '1' },
      { name: 'A_FILE', value: '2' },
      { name: 'B', value: 'b' },
      { name: 'M', value: 'm' },
    ];
    expect(resolveClusterAccess(a, file).exec.env).toEqual(expected);
    expect(resolveClusterAccess(b, file).exec.env).toEqual(expected);
  });

  it('a name twice in the file env collapses like upstream: AppendIfNotExists keeps the last value, Replace the first', () => {
    const env = [
      { name: 'X', value: 'first' },
      { name: 'X', value: 'last' },
    ];
    const p = profile({
      accessProviders: [
        { name: 'test-provider-1', cluster: { server: 'https://a', extensions: [{ name: ENVS_EXT, extension: {} }] } },
      ],
    });
    expect(
      resolveClusterAccess(p, catProvider({ profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }, env)).exec.env,
    ).toEqual([{ name: 'X', value: 'last' }]);
    expect(resolveClusterAccess(p, catProvider({ profileSourcedEnvVarsPolicy: 'Replace' }, env)).exec.env).toEqual([
      { name: 'X', value: 'first' },
    ]);
  });

  it('keeps the file env as is (duplicates included) when no env policy applies', () => {
    const env = [
      { name: 'X', value: '1' },
      { name: 'X', value: '2' },
    ];
    expect(resolveClusterAccess(buildProfile(), catProvider({}, env)).exec.env).toEqual(env);
  });
});

describe('resolveClusterAccess: reserved extensions and policies', () => {
  function withExtensions(extensions: { name: string; extension: unknown }[]): ClusterProfile {
    return profile({ accessProviders: [{ name: 'test-provider-1', cluster: { server: 'https://a', extensions } }] });
  }

  it('refuses an extension name listed twice on the chosen cluster (client-go’s conversion: duplicate name)', () => {
    const p = withExtensions([
      { name: ARGS_EXT, extension: ['--a'] },
      { name: EXEC_EXT, extension: { k: 1 } },
      { name: ARGS_EXT, extension: ['--b', 'c'] },
    ]);
    expect(codeOf(() => resolveClusterAccess(p, catProvider({ profileSourcedCLIArgsPolicy: 'Append' })))).toMatchObject(
      {
        code: 'ERR_PROFILE_INVALID',
        path: '$.status.accessProviders[0].cluster.extensions[2].name',
      },
    );
  });

  it('applies a name repeated after a null payload, in the cluster order (client-go stores no null payload)', () => {
    const p = withExtensions([
      { name: ARGS_EXT, extension: null },
      { name: EXEC_EXT, extension: { k: 1 } },
      { name: ARGS_EXT, extension: ['--b', 'c'] },
    ]);
    expect(resolveClusterAccess(p, catProvider({ profileSourcedCLIArgsPolicy: 'Append' })).exec.args).toEqual([
      '/tmp/cred.json',
      '--b',
      'c',
    ]);
  });

  it('drops null items of an additional-args list, as the YAML decoder upstream does', () => {
    const p = withExtensions([{ name: ARGS_EXT, extension: [null, '--a', null] }]);
    expect(resolveClusterAccess(p, catProvider({ profileSourcedCLIArgsPolicy: 'Append' })).exec.args).toEqual([
      '/tmp/cred.json',
      '--a',
    ]);
  });

  it('refuses what upstream’s YAML decoder refuses in a payload: C1 controls, DEL, U+FFFE, env names over 1024 characters as JSON text', () => {
    const args = catProvider({ profileSourcedCLIArgsPolicy: 'Append' });
    const envs = catProvider({ profileSourcedEnvVarsPolicy: 'Replace' });
    for (const bad of ['a\u0080b', '\u007f', '\ufffe', 'a\u0085b']) {
      expect(
        codeOf(() => resolveClusterAccess(withExtensions([{ name: ARGS_EXT, extension: ['ok', bad] }]), args)),
      ).toMatchObject({
        code: 'ERR_EXTENSION_INVALID',
        path: '$.status.accessProviders[0].cluster.extensions[0].extension[1]',
      });
    }
    expect(
      resolveClusterAccess(withExtensions([{ name: ENVS_EXT, extension: { ['K'.repeat(1022)]: 'v' } }]), envs).exec.env,
    ).toHaveLength(2);
    for (const name of ['K'.repeat(1023), '<'.repeat(171), '\n'.repeat(512)]) {
      expect(
        codeOf(() => resolveClusterAccess(withExtensions([{ name: ENVS_EXT, extension: { [name]: 'v' } }]), envs)).code,
      ).toBe('ERR_EXTENSION_INVALID');
    }
    expect(
      resolveClusterAccess(withExtensions([{ name: ENVS_EXT, extension: { ['\n'.repeat(511)]: 'v' } }]), envs).exec.env,
    ).toHaveLength(2);
  });

  it('turns scalar items into their text and null into nothing, as the YAML decoder upstream does', () => {
    const p = withExtensions([
      { name: ARGS_EXT, extension: ['--port', 8080, true] },
      { name: ENVS_EXT, extension: { N: 1, B: false, E: null } },
    ]);
    const access = resolveClusterAccess(
      p,
      catProvider({ profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'Replace' }, []),
    );
    expect(access.exec.args).toEqual(['/tmp/cred.json', '--port', '8080', 'true']);
    expect(access.exec.env).toEqual([
      { name: 'B', value: 'false' },
      { name: 'E', value: '' },
      { name: 'N', value: '1' },
    ]);
    const nulls = withExtensions([
      { name: ARGS_EXT, extension: null },
      { name: ENVS_EXT, extension: null },
    ]);
    const none = resolveClusterAccess(
      nulls,
      catProvider({ profileSourcedCLIArgsPolicy: 'Append', profileSourcedEnvVarsPolicy: 'Replace' }),
    );
    expect(none.exec.args).toEqual(['/tmp/cred.json']);
    expect(none.exec.env).toEqual([{ name: 'CLIENT_ID', value: 'None' }]);
  });

  it('rejects a bad additional-args payload with the upstream text and the JSON path of the extension', () => {
    const p = withExtensions([
      { name: EXEC_EXT, extension: {} },
      { name: ARGS_EXT, extension: { not: 'a list' } },
    ]);
    const error = codeOf(() => resolveClusterAccess(p, catProvider({ profileSourcedCLIArgsPolicy: 'Append' })));
    expect(error.code).toBe('ERR_EXTENSION_INVALID');
    expect(error.message).toMatch(/^failed to unmarshal additional CLI args extension: /);
    expect(error.path).toBe('$.status.accessProviders[0].cluster.extensions[1].extension');
    const nested = codeOf(() =>
      resolveClusterAccess(
        withExtensions([{ name: ARGS_EXT, extension: ['ok', ['nested']] }]),
        catProvider({ profileSourcedCLIArgsPolicy: 'Append' }),
      ),
    );
    expect(nested.path).toBe('$.status.accessProviders[0].cluster.extensions[0].extension[1]');
  });

  it('rejects a bad additional-envs payload with the upstream text and the JSON path', () => {
    const list = codeOf(() =>
      resolveClusterAccess(
        withExtensions([{ name: ENVS_EXT, extension: ['A=b'] }]),
        catProvider({ profileSourcedEnvVarsPolicy: 'Replace' }),
      ),
    );
    expect(list).toMatchObject({
      code: 'ERR_EXTENSION_INVALID',
      path: '$.status.accessProviders[0].cluster.extensions[0].extension',
    });
    expect(list.message).toMatch(/^failed to unmarshal additional env vars extension: /);
    const value = codeOf(() =>
      resolveClusterAccess(
        withExtensions([{ name: ENVS_EXT, extension: { 'MY.VAR': { x: 1 } } }]),
        catProvider({ profileSourcedEnvVarsPolicy: 'AppendIfNotExists' }),
      ),
    );
    expect(value.path).toBe('$.status.accessProviders[0].cluster.extensions[0].extension["MY.VAR"]');
  });

  it('ignores a bad payload when the policy ignores the extension (as upstream, which never parses it then)', () => {
    const p = withExtensions([
      { name: ARGS_EXT, extension: 'garbage' },
      { name: ENVS_EXT, extension: 42 },
    ]);
    expect(resolveClusterAccess(p, catProvider()).exec.args).toEqual(['/tmp/cred.json']);
  });

  it('rejects an unknown CLI-args policy only when the additional-args extension is present', () => {
    const bad = catProvider({ profileSourcedCLIArgsPolicy: 'Prepend' as never });
    expect(resolveClusterAccess(lookupProfile(), { providers: [{ ...bad.providers[0]! }] }).providerName).toBe(
      'test-provider-1',
    );
    expect(codeOf(() => resolveClusterAccess(withExtensions([{ name: ARGS_EXT, extension: ['--a'] }]), bad))).toEqual({
      code: 'ERR_POLICY_UNSUPPORTED',
      message: 'unsupported ProfileSourcedCLIArgsPolicy: "Prepend"',
      path: '$.providers[0].profileSourcedCLIArgsPolicy',
    });
  });

  it('rejects an unknown env policy only when the additional-envs extension is present', () => {
    const bad = catProvider({ profileSourcedEnvVarsPolicy: 'Merge' as never });
    expect(resolveClusterAccess(withExtensions([{ name: ARGS_EXT, extension: ['--a'] }]), bad).exec.env).toEqual([
      { name: 'CLIENT_ID', value: 'None' },
    ]);
    expect(
      codeOf(() => resolveClusterAccess(withExtensions([{ name: ENVS_EXT, extension: { A: 'b' } }]), bad)),
    ).toEqual({
      code: 'ERR_POLICY_UNSUPPORTED',
      message: 'unsupported ProfileSourcedEnvVarsPolicy: "Merge"',
      path: '$.providers[0].profileSourcedEnvVarsPolicy',
    });
  });

  it('refuses the exec extension listed twice; after a null payload it takes the later one', () => {
    const twice = withExtensions([
      { name: EXEC_EXT, extension: { n: 1 } },
      { name: EXEC_EXT, extension: { n: 2 } },
    ]);
    expect(codeOf(() => resolveClusterAccess(twice, catProvider())).code).toBe('ERR_PROFILE_INVALID');
    const afterNull = withExtensions([
      { name: EXEC_EXT, extension: null },
      { name: EXEC_EXT, extension: { n: 2 } },
    ]);
    expect(resolveClusterAccess(afterNull, catProvider()).cluster.config).toEqual({ n: 2 });
  });
});

describe('resolveClusterAccess: the profile crosses a boundary and is validated', () => {
  it('rejects an unknown apiVersion with ERR_PROFILE_INVALID at $.apiVersion', () => {
    const p = { ...buildProfile(), apiVersion: 'multicluster.x-k8s.io/v9' } as unknown as ClusterProfile;
    expect(codeOf(() => resolveClusterAccess(p, upstreamProviders()))).toMatchObject({
      code: 'ERR_PROFILE_INVALID',
      path: '$.apiVersion',
    });
    expect(codeOf(() => resolveClusterAccess(null as unknown as ClusterProfile, upstreamProviders())).code).toBe(
      'ERR_PROFILE_INVALID',
    );
  });

  it('rejects a provider without a server, naming the JSON path', () => {
    const p = profile({ accessProviders: [{ name: 'test-provider-1', cluster: {} as never }] });
    const error = codeOf(() => resolveClusterAccess(p, upstreamProviders()));
    expect(error.code).toBe('ERR_PROFILE_INVALID');
    expect(error.path).toMatch(/^\$\.status\.accessProviders\[0\]\.cluster/);
  });

  it('rejects a providers list that is not a list with ERR_ACCESS_CONFIG_INVALID', () => {
    const error = codeOf(() => resolveClusterAccess(buildProfile(), { providers: 'x' } as unknown as AccessConfig));
    expect(error.code).toBe('ERR_ACCESS_CONFIG_INVALID');
    expect(error.path).toBe('$.providers');
  });

  it('accepts a v1alpha2 profile', () => {
    const p = { ...buildProfile(), apiVersion: 'multicluster.x-k8s.io/v1alpha2' } as ClusterProfile;
    expect(resolveClusterAccess(p, catProvider()).cluster.server).toBe('https://test-server.com');
  });
});
