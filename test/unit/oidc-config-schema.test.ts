// schemas/oidc-config.schema.json is the contract of spec.cluster.config for clusterprofile-oidc. The plugin checks
// it by hand on every run (settings.ts: the validators are too large a module for the cache-hit path) and with the
// schema itself on a miss; these tests hold the three together: the OidcClusterConfig type has the schema's keys, and
// the hand check accepts and refuses what the schema does, naming the same path.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { oidcFlags } from '../helpers/oidc-plugin.js';
import { isCredentialsError } from '../../src/base/errors.js';
import { validateDocument } from '../../src/schemas/index.js';
import { assertOidcClusterConfig, parseOidcSettings } from '../../src/providers/oidc/settings.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const schema = JSON.parse(readFileSync(`${root}schemas/oidc-config.schema.json`, 'utf8')) as {
  required: string[];
  properties: Record<string, unknown>;
};

const flags = oidcFlags({ grant: 'device_code' });

/** The hand check's verdict: undefined when accepted, else the path it names. */
function hand(config: Record<string, unknown>): string | undefined {
  try {
    // An interactive grant: no cross-field rule of the controller grants (token kind, audience) gets in the way.
    parseOidcSettings(
      {
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive: true, cluster: { server: 's', config } },
      },
      flags,
    );
    return undefined;
  } catch (error) {
    if (isCredentialsError(error) && error.code === 'ERR_OIDC_CONFIG') return error.path;
    throw error;
  }
}

function bySchema(config: Record<string, unknown>): string | undefined {
  const first = validateDocument('oidc-config', config)[0];
  return first === undefined ? undefined : `$.spec.cluster.config${first.path.slice(1)}`;
}

const pem = Buffer.from('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n').toString('base64');
const base = { issuerURL: 'https://dex.example.com/dex', clientID: 'kubectl' };

describe('OidcClusterConfig (settings.ts) has the keys of schemas/oidc-config.schema.json', () => {
  it('same keys, issuerURL the only required one', () => {
    const source = ts.createSourceFile(
      'settings.ts',
      readFileSync(`${root}src/providers/oidc/settings.ts`, 'utf8'),
      ts.ScriptTarget.Latest,
    );
    let members: ts.NodeArray<ts.TypeElement> | undefined;
    source.forEachChild((node) => {
      if (ts.isInterfaceDeclaration(node) && node.name.text === 'OidcClusterConfig') members = node.members;
    });
    const properties = (members ?? ts.factory.createNodeArray()).filter(ts.isPropertySignature);
    expect(properties.map((p) => (p.name as ts.Identifier).text).sort()).toEqual(Object.keys(schema.properties).sort());
    expect(properties.filter((p) => p.questionToken === undefined).map((p) => (p.name as ts.Identifier).text)).toEqual(
      schema.required,
    );
  });
});

describe('the hand check of spec.cluster.config agrees with the schema', () => {
  it.each([
    ['the minimum', {}],
    [
      'nulls count as absent',
      {
        audience: null,
        resource: null,
        scopes: null,
        token: null,
        issuerCA: null,
        signingAlgorithms: null,
        subjectTokenType: null,
        tokenParams: null,
      },
    ],
    ['scopes as one string', { scopes: 'groups audience:server:client_id:kubernetes' }],
    ['scopes as a list', { scopes: ['groups'] }],
    [
      'every key',
      {
        audience: 'kubernetes',
        token: 'id_token',
        issuerCA: pem,
        signingAlgorithms: ['RS256', 'ES256'],
        subjectTokenType: 'urn:ietf:params:oauth:token-type:id_token',
        tokenParams: { connector_id: 'kubernetes', 'x.y': 'z' },
      },
    ],
    ["an unknown key (another tool's setting)", { kubeloginFlags: ['--x'] }],
    ['the issuer with a path and a trailing slash', { issuerURL: 'https://127.0.0.1:5556/dex/' }],
  ])('accepts %s', (_, extra) => {
    const config = { ...base, ...extra };
    expect(bySchema(config)).toBeUndefined();
    expect(hand(config)).toBeUndefined();
  });

  it.each([
    ['no issuerURL', { issuerURL: undefined }, '$.spec.cluster.config.issuerURL'],
    ['a number for issuerURL', { issuerURL: 7 }, '$.spec.cluster.config.issuerURL'],
    ['an http issuer', { issuerURL: 'http://dex.example.com' }, '$.spec.cluster.config.issuerURL'],
    ['an issuer with a query', { issuerURL: 'https://dex.example.com/?a=b' }, '$.spec.cluster.config.issuerURL'],
    ['an issuer with a fragment', { issuerURL: 'https://dex.example.com#x' }, '$.spec.cluster.config.issuerURL'],
    ['an issuer with a space', { issuerURL: 'https://dex example.com' }, '$.spec.cluster.config.issuerURL'],
    ['an empty clientID', { clientID: '' }, '$.spec.cluster.config.clientID'],
    ['a number for audience', { audience: 3 }, '$.spec.cluster.config.audience'],
    ['an empty resource', { resource: '' }, '$.spec.cluster.config.resource'],
    ['scopes as a number', { scopes: 5 }, '$.spec.cluster.config.scopes'],
    ['scopes with a number', { scopes: ['a', 1] }, '$.spec.cluster.config.scopes'],
    ['an unknown token kind', { token: 'refresh_token' }, '$.spec.cluster.config.token'],
    ['issuerCA that is not base64', { issuerCA: 'not base64!' }, '$.spec.cluster.config.issuerCA'],
    ['no signing algorithm', { signingAlgorithms: [] }, '$.spec.cluster.config.signingAlgorithms'],
    ['HS256', { signingAlgorithms: ['RS256', 'HS256'] }, '$.spec.cluster.config.signingAlgorithms'],
    ['one algorithm as a string', { signingAlgorithms: 'RS256' }, '$.spec.cluster.config.signingAlgorithms'],
    ['a subject token type that is no URI', { subjectTokenType: 'id_token' }, '$.spec.cluster.config.subjectTokenType'],
    ['tokenParams as a list', { tokenParams: ['connector_id=x'] }, '$.spec.cluster.config.tokenParams'],
    ['tokenParams naming scope', { tokenParams: { scope: 'x' } }, '$.spec.cluster.config.tokenParams'],
    ['tokenParams naming client_secret', { tokenParams: { client_secret: 'x' } }, '$.spec.cluster.config.tokenParams'],
    ['a tokenParams name with a space', { tokenParams: { 'a b': 'x' } }, '$.spec.cluster.config.tokenParams'],
    [
      'an empty tokenParams value',
      { tokenParams: { connector_id: '' } },
      '$.spec.cluster.config.tokenParams.connector_id',
    ],
    [
      'a number as tokenParams value',
      { tokenParams: { connector_id: 1 } },
      '$.spec.cluster.config.tokenParams.connector_id',
    ],
  ])('refuses %s, at the same path', (_, extra, path) => {
    const config: Record<string, unknown> = { ...base, ...extra };
    for (const [k, v] of Object.entries(config)) if (v === undefined) delete config[k];
    // The schema may point one step deeper (the list item, the parameter name) than the hand check.
    expect(bySchema(config)?.startsWith(path)).toBe(true);
    expect(hand(config)?.startsWith(path)).toBe(true);
  });

  it('the hand check is stricter where a schema cannot look: issuerCA must hold a PEM certificate', () => {
    const config = { ...base, issuerCA: Buffer.from('not a pem').toString('base64') };
    expect(bySchema(config)).toBeUndefined();
    expect(hand(config)).toBe('$.spec.cluster.config.issuerCA');
  });

  it('on a miss, the schema itself: ERR_OIDC_CONFIG (exit 2) naming the path', async () => {
    await expect(assertOidcClusterConfig({ ...base })).resolves.toBeUndefined();
    await expect(assertOidcClusterConfig({ ...base, tokenParams: { connector_id: 1 } })).rejects.toMatchObject({
      code: 'ERR_OIDC_CONFIG',
      exitCode: 2,
      path: '$.spec.cluster.config.tokenParams.connector_id',
    });
  });
});
