// What a ClusterProfile's author must not control (a difference from upstream, docs/explanation/upstream.md): environment
// variables that take over the plugin or move its credentials, and `insecure-skip-tls-verify: true` — unless the
// operator's providers file allows them.
import { describe, expect, it } from 'vitest';
import { parseAccessConfig } from '../../src/resolve/access-config.js';
import { buildConfigFromClusterProfile } from '../../src/client-node/build-config.js';
import { ExecCredentialCache } from '../../src/exec/authenticator.js';
import { resolveClusterAccess } from '../../src/resolve/cluster-access.js';
import type { AccessConfig, ClusterProfile, EnvVarsPolicy, ProviderConfig } from '../../src/resolve/types.js';
import { ENVS_EXT, deepFreeze, profile } from '../helpers/library-fixtures.js';

const V1 = 'client.authentication.k8s.io/v1' as const;

function providers(overrides: Partial<ProviderConfig> = {}, policy: EnvVarsPolicy = 'AppendIfNotExists'): AccessConfig {
  return {
    providers: [
      {
        name: 'p',
        execConfig: { apiVersion: V1, command: 'clusterprofile-oidc', env: [{ name: 'FILE', value: 'file' }] },
        profileSourcedEnvVarsPolicy: policy,
        ...overrides,
      },
    ],
  };
}

function withEnvs(envs: Record<string, string>, cluster: Record<string, unknown> = {}): ClusterProfile {
  return profile({
    accessProviders: [
      { name: 'other', cluster: { server: 'https://other' } },
      {
        name: 'p',
        cluster: {
          server: 'https://member:6443',
          extensions: [
            { name: 'x', extension: {} },
            { name: ENVS_EXT, extension: envs },
          ],
          ...cluster,
        },
      },
    ],
  });
}

function refusal(action: () => unknown): {
  code: string;
  message: string;
  path: string | undefined;
  hint: string | undefined;
} {
  try {
    action();
  } catch (error) {
    const e = error as { code: string; message: string; path: string | undefined; hint: string | undefined };
    return { code: e.code, message: e.message, path: e.path, hint: e.hint };
  }
  throw new Error('expected a refusal');
}

const EXT = '$.status.accessProviders[1].cluster.extensions[1].extension';

describe('profile-sourced environment variables that can take over a plugin are refused', () => {
  it.each([
    ['NODE_OPTIONS', '--import=data:text/javascript;base64,cHJvY2Vzcy5leGl0KDcp', 'load code'],
    ['NODE_PATH', '/tmp/evil', 'load code'],
    ['NODE_EXTRA_CA_CERTS', '/tmp/evil-ca.pem', 'load code'],
    ['NODE_TLS_REJECT_UNAUTHORIZED', '0', 'load code'],
    ['LD_PRELOAD', '/tmp/evil.so', 'load code'],
    ['LD_LIBRARY_PATH', '/tmp', 'load code'],
    ['DYLD_INSERT_LIBRARIES', '/tmp/evil.dylib', 'load code'],
    ['OPENSSL_CONF', '/tmp/engine.cnf', 'load code'],
    ['BASH_ENV', '/tmp/evil.sh', 'load code'],
    ['PYTHONPATH', '/tmp', 'load code'],
    ['PATH', '/tmp/evil-bin', 'which program runs'],
    ['SSL_CERT_FILE', '/tmp/ca.pem', 'trusts'],
    ['GODEBUG', 'x509ignoreCN=1', 'trusts'],
    ['KUBERNETES_EXEC_INFO', '{}', 'credentials'],
    ['KUBECONFIG', '/tmp/other', 'credentials'],
    ['KUBECACHEDIR', '/tmp/shared', 'credentials'],
    ['KUBERNETES_SERVICE_HOST', 'attacker.example', 'credentials'],
    ['HOME', '/tmp', 'credentials'],
    ['HTTPS_PROXY', 'http://attacker:3128', 'credentials'],
    ['https_proxy', 'http://attacker:3128', 'credentials'],
    ['NO_PROXY', '*', 'credentials'],
    ['SSLKEYLOGFILE', '/tmp/keys', 'credentials'],
    ['CLUSTERPROFILE_EXEC_DEPTH', '0', 'credentials'],
  ])('%s → ERR_PROFILE_ENV_DENIED naming the variable', (name, value, why) => {
    for (const policy of ['AppendIfNotExists', 'Replace'] as const) {
      const error = refusal(() => resolveClusterAccess(withEnvs({ SAFE: 'x', [name]: value }), providers({}, policy)));
      expect(error.code).toBe('ERR_PROFILE_ENV_DENIED');
      expect(error.path).toBe(`${EXT}.${name}`);
      expect(error.message).toContain(JSON.stringify(name));
      expect(error.message).toContain(why);
      expect(error.message).not.toContain(value);
      expect(error.hint).toContain(`"allowedProfileEnvVars": [${JSON.stringify(name)}]`);
      expect(error.hint).toContain('$.providers[0]');
    }
  });

  it('sees through a name that carries "=" (the process reads the part before it) and through letter case', () => {
    const sneaky = refusal(() =>
      resolveClusterAccess(withEnvs({ 'NODE_OPTIONS=--import=data:text/javascript,x': 'y' }), providers()),
    );
    expect(sneaky.code).toBe('ERR_PROFILE_ENV_DENIED');
    expect(sneaky.path).toBe(`${EXT}["NODE_OPTIONS=--import=data:text/javascript,x"]`);
    expect(sneaky.hint).toContain('["NODE_OPTIONS"]');
    expect(refusal(() => resolveClusterAccess(withEnvs({ node_options: '--require=/tmp/x' }), providers())).code).toBe(
      'ERR_PROFILE_ENV_DENIED',
    );
    expect(refusal(() => resolveClusterAccess(withEnvs({ Ld_Preload: '/tmp/x.so' }), providers())).code).toBe(
      'ERR_PROFILE_ENV_DENIED',
    );
  });

  it('is refused even where the file already sets it (the profile must not name it), but not when the policy ignores the extension', () => {
    const file = providers({
      execConfig: { apiVersion: V1, command: 'c', env: [{ name: 'PATH', value: '/usr/bin' }] },
    });
    expect(refusal(() => resolveClusterAccess(withEnvs({ PATH: '/tmp' }), file)).code).toBe('ERR_PROFILE_ENV_DENIED');
    for (const policy of ['Ignore', ''] as const) {
      const access = resolveClusterAccess(withEnvs({ NODE_OPTIONS: '--require=/tmp/x' }), providers({}, policy));
      expect(access.exec.env).toEqual([{ name: 'FILE', value: 'file' }]);
    }
  });

  it('keeps ordinary per-cluster variables', () => {
    const access = resolveClusterAccess(
      withEnvs({ TENANT_ID: 't', AWS_REGION: 'eu-west-1', NODENAME: 'n', PATHWAY: 'p' }),
      providers(),
    );
    expect(access.exec.env.map((v) => v.name)).toEqual(['FILE', 'AWS_REGION', 'NODENAME', 'PATHWAY', 'TENANT_ID']);
  });

  it('lets the operator allow a named variable through the providers file, by exact name in any case', () => {
    const file = deepFreeze(
      parseAccessConfig(
        JSON.stringify({
          providers: [
            {
              name: 'p',
              execConfig: { apiVersion: V1, command: 'clusterprofile-oidc' },
              profileSourcedEnvVarsPolicy: 'Replace',
              allowedProfileEnvVars: ['https_proxy', 'NO_PROXY'],
            },
          ],
        }),
        'providers.json',
      ),
    );
    const access = resolveClusterAccess(withEnvs({ HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: '.svc' }), file);
    expect(access.exec.env).toEqual([
      { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
      { name: 'NO_PROXY', value: '.svc' },
    ]);
    // Allowing one variable allows no other, and no prefix.
    expect(refusal(() => resolveClusterAccess(withEnvs({ HTTP_PROXY: 'http://proxy:3128' }), file)).code).toBe(
      'ERR_PROFILE_ENV_DENIED',
    );
  });

  it('the opt-out lives in the providers file only: the schema types it and a bad value is refused there', () => {
    const bad = refusal(() =>
      parseAccessConfig(
        JSON.stringify({ providers: [{ name: 'p', allowedProfileEnvVars: 'NODE_OPTIONS' }] }),
        'providers.json',
      ),
    );
    expect(bad.code).toBe('ERR_ACCESS_CONFIG_INVALID');
    expect(bad.path).toBe('$.providers[0].allowedProfileEnvVars');
    const insecure = refusal(() =>
      parseAccessConfig(
        JSON.stringify({ providers: [{ name: 'p', allowInsecureSkipTLSVerify: 'yes' }] }),
        'providers.json',
      ),
    );
    expect(insecure.code).toBe('ERR_ACCESS_CONFIG_INVALID');
    expect(insecure.path).toBe('$.providers[0].allowInsecureSkipTLSVerify');
  });
});

describe('insecure-skip-tls-verify from a profile', () => {
  const insecure = (allow?: boolean) => ({
    profile: withEnvs({}, { 'insecure-skip-tls-verify': true }),
    file: providers(allow === undefined ? {} : { allowInsecureSkipTLSVerify: allow }),
  });

  it('is refused unless the providers-file entry allows it, naming the field', () => {
    for (const allow of [undefined, false]) {
      const { profile: p, file } = insecure(allow);
      const error = refusal(() => resolveClusterAccess(p, file));
      expect(error.code).toBe('ERR_PROFILE_INSECURE_TLS_DENIED');
      expect(error.path).toBe("$.status.accessProviders[1].cluster['insecure-skip-tls-verify']");
      expect(error.hint).toContain('"allowInsecureSkipTLSVerify": true');
      // Not handed to client-node either.
      expect(refusal(() => buildConfigFromClusterProfile(p, file, { cache: new ExecCredentialCache() })).code).toBe(
        'ERR_PROFILE_INSECURE_TLS_DENIED',
      );
    }
  });

  it('is honoured for client-node and the plugin when allowed; false is always fine', () => {
    const { profile: p, file } = insecure(true);
    const access = resolveClusterAccess(p, file);
    expect(access.cluster['insecure-skip-tls-verify']).toBe(true);
    const kc = buildConfigFromClusterProfile(p, file, { cache: new ExecCredentialCache() });
    expect(kc.getCurrentCluster()?.skipTLSVerify).toBe(true);
    const verified = resolveClusterAccess(withEnvs({}, { 'insecure-skip-tls-verify': false }), providers());
    expect(verified.cluster['insecure-skip-tls-verify']).toBe(false);
  });

  it('of a provider that is not chosen does not matter', () => {
    const p = profile({
      accessProviders: [
        { name: 'other', cluster: { server: 'https://other', 'insecure-skip-tls-verify': true } },
        { name: 'p', cluster: { server: 'https://member:6443' } },
      ],
    });
    expect(resolveClusterAccess(p, providers()).providerName).toBe('p');
  });
});
