// The TypeScript types of src/resolve/types.ts (and the exec types it re-exports from src/base/exec-credential.ts)
// and the JSON Schemas describe the same documents: typed samples
// validate, and each interface has the same keys (and required keys) as its schema object. The interfaces are read
// with the TypeScript compiler API, so a key added on one side only fails here.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import type {
  AccessConfig,
  ClusterProfile,
  ExecCluster,
  ExecConfig,
  ExecCredentialStatus,
  ProviderConfig,
} from '../../src/resolve/types.js';
import { validateDocument } from '../../src/schemas/index.js';
import { certPem, keyPem } from '../helpers/schemas-fixtures.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

type Node = Record<string, any>;

function schema(id: string): Node {
  return JSON.parse(readFileSync(`${root}schemas/${id}.schema.json`, 'utf8'));
}

function at(document: Node, pointer: string): Node {
  return pointer
    .split('/')
    .filter(Boolean)
    .reduce<Node>((node, key) => node[key], document);
}

// The library's document types, with the exec types (ExecCluster, ExecCredentialStatus, ...) that live in the base layer.
const sources = ['src/resolve/types.ts', 'src/base/exec-credential.ts'].map((file) =>
  ts.createSourceFile(file, readFileSync(`${root}${file}`, 'utf8'), ts.ScriptTarget.Latest),
);
const source = {
  forEachChild: (visit: (node: ts.Node) => void) => {
    for (const file of sources) file.forEachChild(visit);
  },
};

/** Keys of an interface (or of an inline object type of one of its members: `ClusterProfile.metadata`). */
function members(name: string, member?: string): { keys: string[]; required: string[] } {
  let found: ts.NodeArray<ts.TypeElement> | undefined;
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      found = node.members;
    }
  });
  if (found === undefined) {
    throw new Error(`interface ${name} not found in src/resolve/types.ts or src/base/exec-credential.ts`);
  }
  if (member !== undefined) {
    const property = found.find((element) => element.name !== undefined && nameOf(element.name) === member);
    const type = property !== undefined && ts.isPropertySignature(property) ? property.type : undefined;
    if (type === undefined || !ts.isTypeLiteralNode(type)) {
      throw new Error(`${name}.${member} is not an inline object type`);
    }
    found = type.members;
  }
  const properties = found.filter(ts.isPropertySignature);
  return {
    keys: properties.map((property) => nameOf(property.name)).sort(),
    required: properties
      .filter((property) => property.questionToken === undefined)
      .map((property) => nameOf(property.name))
      .sort(),
  };
}

function nameOf(name: ts.PropertyName): string {
  return ts.isIdentifier(name) || ts.isStringLiteral(name)
    ? name.text
    : name.getText(sources.find((file) => file.fileName === name.getSourceFile()?.fileName) ?? sources[0]);
}

/** String literals of a type alias (`ExecApiVersion`) or of an interface member (`ClusterProfile.apiVersion`). */
function literals(name: string, member?: string): string[] {
  let type: ts.TypeNode | undefined;
  source.forEachChild((node) => {
    if (member === undefined && ts.isTypeAliasDeclaration(node) && node.name.text === name) {
      type = node.type;
    }
    if (member !== undefined && ts.isInterfaceDeclaration(node) && node.name.text === name) {
      const property = node.members.find((element) => element.name !== undefined && nameOf(element.name) === member);
      type = property !== undefined && ts.isPropertySignature(property) ? property.type : undefined;
    }
  });
  const parts: readonly ts.TypeNode[] =
    type !== undefined && ts.isUnionTypeNode(type) ? type.types : type === undefined ? [] : [type];
  return parts
    .filter((part): part is ts.LiteralTypeNode => ts.isLiteralTypeNode(part) && ts.isStringLiteral(part.literal))
    .map((part) => (part.literal as ts.StringLiteral).text)
    .sort();
}

function schemaKeys(node: Node): { keys: string[]; required: string[] } {
  return { keys: Object.keys(node.properties ?? {}).sort(), required: [...(node.required ?? [])].sort() };
}

describe('src/resolve/types.ts agrees with the schemas', () => {
  const v1alpha1 = schema('clusterprofile.v1alpha1');
  const v1alpha2 = schema('clusterprofile.v1alpha2');
  const providersFile = schema('providers-file');
  const execConfig = schema('exec-config');

  test.each([
    // [interface, member, schema, pointer, keys only in the type, keys only in the schema, why]
    ['Cluster', undefined, v1alpha1, '/$defs/cluster', [], []],
    ['Cluster', undefined, v1alpha2, '/$defs/cluster', ['certificate-authority'], []],
    ['NamedExtension', undefined, v1alpha1, '/$defs/cluster/properties/extensions/items', [], []],
    ['AccessProvider', undefined, v1alpha2, '/$defs/accessProvider', [], []],
    ['ClusterProfile', undefined, v1alpha1, '', [], []],
    ['ClusterProfile', 'spec', v1alpha1, '/properties/spec', [], []],
    ['ClusterProfile', 'status', v1alpha1, '/properties/status', [], ['conditions', 'version', 'properties']],
    ['ClusterProfile', 'metadata', v1alpha1, '/$defs/metadata', [], ['annotations']],
    ['ExecConfig', undefined, execConfig, '', [], []],
    ['ExecConfig', undefined, providersFile, '/$defs/execConfig', [], []],
    ['ProviderConfig', undefined, providersFile, '/$defs/provider', [], []],
    ['AccessConfig', undefined, providersFile, '', [], []],
    ['ExecCluster', undefined, schema('execcredential-input.v1'), '/$defs/cluster', [], []],
    ['ExecCluster', undefined, schema('execcredential-input.v1beta1'), '/$defs/cluster', [], []],
    ['ExecCredentialStatus', undefined, schema('execcredential-output.v1'), '/$defs/status', [], []],
  ] as const)('%s%s has the keys of %s#%s', (name, member, document, pointer, typeOnly, schemaOnly) => {
    const type = members(name, member);
    const expected = schemaKeys(at(document, pointer));
    const typeKeys = type.keys.filter((key) => !(typeOnly as readonly string[]).includes(key));
    const schemaSide = expected.keys.filter((key) => !(schemaOnly as readonly string[]).includes(key));
    expect(typeKeys).toEqual(schemaSide);
  });

  test('what a schema requires is never optional in the type, except where the type is deliberately looser', () => {
    const cases: [string, string | undefined, Node, string][] = [
      ['Cluster', undefined, v1alpha1, '/$defs/cluster'],
      ['NamedExtension', undefined, v1alpha1, '/$defs/cluster/properties/extensions/items'],
      ['AccessProvider', undefined, v1alpha1, '/$defs/accessProvider'],
      ['ClusterProfile', 'metadata', v1alpha1, '/$defs/metadata'],
      ['ExecConfig', undefined, execConfig, ''],
      ['ExecCluster', undefined, schema('execcredential-input.v1'), '/$defs/cluster'],
    ];
    for (const [name, member, document, pointer] of cases) {
      const required = members(name, member).required;
      expect(required, `${name}${member ?? ''}`).toEqual(
        expect.arrayContaining(schemaKeys(at(document, pointer)).required),
      );
    }
    // ClusterProfile.spec is optional in the type (the library only reads status) but required by the CRD.
    expect(members('ClusterProfile').required).toEqual(['apiVersion', 'kind', 'metadata']);
    // AccessProvider serves both versions, so it follows the looser one: v1alpha1's cluster is `omitempty`, v1alpha2
    // requires it. resolveClusterAccess refuses a chosen provider without a cluster (ERR_PROFILE_INVALID).
    expect(at(v1alpha1, '/$defs/accessProvider').required).toEqual(['name']);
    expect([...at(v1alpha2, '/$defs/accessProvider').required].sort()).toEqual(['cluster', 'name']);
    expect(members('AccessProvider').required).toEqual(['name']);
  });

  test('the string unions are the schemas enums and consts', () => {
    expect(literals('ExecApiVersion')).toEqual([...execConfig.properties.apiVersion.enum].sort());
    expect(literals('ClusterProfile', 'apiVersion')).toEqual([
      v1alpha1.properties.apiVersion.const,
      v1alpha2.properties.apiVersion.const,
    ]);
    expect(literals('ClusterProfile', 'kind')).toEqual([v1alpha1.properties.kind.const]);
  });

  test('typed sample documents validate', () => {
    const profile: ClusterProfile = {
      apiVersion: 'multicluster.x-k8s.io/v1alpha2',
      kind: 'ClusterProfile',
      metadata: { name: 'spoke', namespace: 'fleet', labels: { 'x-k8s.io/cluster-manager': 'demo' } },
      spec: { displayName: 'Spoke', clusterManager: { name: 'demo' } },
      status: {
        accessProviders: [
          {
            name: 'oidc',
            cluster: {
              server: 'https://spoke.example.com:6443',
              'tls-server-name': 'spoke',
              'insecure-skip-tls-verify': false,
              'certificate-authority-data': 'LS0tLS1CRUdJTg==',
              'proxy-url': 'https://proxy:443',
              'disable-compression': true,
              extensions: [{ name: 'client.authentication.k8s.io/exec', extension: { audience: 'spoke' } }],
            },
          },
        ],
      },
    };
    expect(validateDocument('clusterprofile.v1alpha2', profile)).toEqual([]);
    const legacy: ClusterProfile = {
      ...profile,
      apiVersion: 'multicluster.x-k8s.io/v1alpha1',
      status: {
        credentialProviders: profile.status!.accessProviders!.map((entry) => ({
          ...entry,
          cluster: { ...entry.cluster!, 'certificate-authority': '/ca.crt' },
        })),
      },
    };
    expect(validateDocument('clusterprofile.v1alpha1', legacy)).toEqual([]);

    const exec: ExecConfig = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: 'clusterprofile-oidc',
      args: ['--issuer', 'https://idp'],
      env: [{ name: 'A', value: 'b' }],
      installHint: 'npm i -g clusterprofile-credentials',
      provideClusterInfo: true,
      interactiveMode: 'Never',
    };
    const provider: ProviderConfig = {
      name: 'oidc',
      execConfig: exec,
      profileSourcedCLIArgsPolicy: 'Append',
      profileSourcedEnvVarsPolicy: 'AppendIfNotExists',
    };
    const file: AccessConfig = { providers: [provider, { name: 'none' }] };
    expect(validateDocument('providers-file', file)).toEqual([]);
    expect(validateDocument('exec-config', exec)).toEqual([]);

    const cluster: ExecCluster = {
      server: 'https://spoke:6443',
      'tls-server-name': 'spoke',
      'insecure-skip-tls-verify': false,
      'certificate-authority-data': 'LS0tLS1CRUdJTg==',
      'proxy-url': 'socks5://p:1080',
      'disable-compression': false,
      config: { audience: 'spoke' },
    };
    for (const apiVersion of ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'] as const) {
      const suffix = apiVersion.endsWith('v1') ? 'v1' : 'v1beta1';
      expect(
        validateDocument(`execcredential-input.${suffix}`, {
          apiVersion,
          kind: 'ExecCredential',
          spec: { interactive: false, cluster },
        }),
      ).toEqual([]);
      const status: ExecCredentialStatus = {
        expirationTimestamp: '2026-11-22T10:00:00Z',
        token: 'token',
        clientCertificateData: certPem,
        clientKeyData: keyPem,
      };
      expect(
        validateDocument(`execcredential-output.${suffix}`, { apiVersion, kind: 'ExecCredential', status }),
      ).toEqual([]);
    }
  });
});
