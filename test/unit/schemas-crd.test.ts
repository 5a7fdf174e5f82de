import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
// @ts-expect-error -- a plain ESM build script without type declarations
import { crdPath, generateCrd, readProfileSchemas, toStructural } from '../../scripts/generate-crd.mjs';
import { validateDocument } from '../../src/schemas/index.js';
import { upstreamProfileV1alpha1, upstreamProfileV1alpha2 } from '../helpers/schemas-fixtures.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const committed = readFileSync(`${root}${crdPath}`, 'utf8');
const crd = parse(committed);

type Node = Record<string, any>;

function version(name: string): Node {
  return crd.spec.versions.find((entry: Node) => entry.name === name);
}

/** Every schema node with its path. */
function* nodes(schema: Node, path = ''): Generator<[string, Node]> {
  yield [path || '.', schema];
  for (const [name, child] of Object.entries(schema.properties ?? {})) {
    yield* nodes(child as Node, `${path}.${name}`);
  }
  if (schema.items !== undefined) {
    yield* nodes(schema.items, `${path}[]`);
  }
  if (typeof schema.additionalProperties === 'object') {
    yield* nodes(schema.additionalProperties, `${path}{}`);
  }
}

describe('the ClusterProfile CRD', () => {
  test('is exactly what scripts/generate-crd.mjs makes of the schemas (run `npm run schemas:crd` after a schema change)', () => {
    expect(generateCrd(), `${crdPath} is out of date: run npm run schemas:crd`).toBe(committed);
  });

  test('serves v1alpha1 (stored) and v1alpha2, with the status subresource, namespaced', () => {
    expect(crd).toMatchObject({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'clusterprofiles.multicluster.x-k8s.io' },
      spec: {
        group: 'multicluster.x-k8s.io',
        scope: 'Namespaced',
        names: {
          kind: 'ClusterProfile',
          listKind: 'ClusterProfileList',
          plural: 'clusterprofiles',
          singular: 'clusterprofile',
        },
      },
    });
    expect(
      crd.spec.versions.map((entry: Node) => [entry.name, entry.served, entry.storage, entry.subresources]),
    ).toEqual([
      ['v1alpha1', true, true, { status: {} }],
      ['v1alpha2', true, false, { status: {} }],
    ]);
  });

  test.each(['v1alpha1', 'v1alpha2'])('%s is a structural schema the API server accepts', (name) => {
    const schema = version(name).schema.openAPIV3Schema;
    expect(schema.properties.metadata).toEqual({ type: 'object' });
    expect(schema.properties.apiVersion.type).toBe('string');
    expect(schema.required).toEqual(['spec']);
    for (const [path, node] of nodes(schema)) {
      const preserve = node['x-kubernetes-preserve-unknown-fields'] === true;
      expect(typeof node.type === 'string' || preserve, `${path} has a type`).toBe(true);
      for (const key of Object.keys(node)) {
        expect(
          [
            '$ref',
            '$defs',
            'const',
            'allOf',
            'anyOf',
            'oneOf',
            'not',
            'if',
            'then',
            'else',
            'contentEncoding',
            'deprecated',
            'title',
          ],
          `${path} uses ${key}`,
        ).not.toContain(key);
        expect(
          !key.startsWith('x-') || key.startsWith('x-kubernetes-'),
          `${path} has the non-Kubernetes extension ${key}`,
        ).toBe(true);
      }
      expect(
        node.properties !== undefined && node.additionalProperties !== undefined,
        `${path}: properties with additionalProperties`,
      ).toBe(false);
      if (node['x-kubernetes-list-type'] === 'map') {
        // Map keys must be required (or defaulted) in the items.
        for (const key of node['x-kubernetes-list-map-keys']) {
          expect(node.items.required, `${path}[] requires its key ${key}`).toContain(key);
        }
      }
    }
  });

  test('follows upstream: v1alpha1 has both provider lists (keyed, as since v0.1.0), v1alpha2 keyed lists and no credentialProviders', () => {
    const v1alpha1 = version('v1alpha1').schema.openAPIV3Schema.properties.status.properties;
    expect(Object.keys(v1alpha1)).toEqual([
      'conditions',
      'version',
      'properties',
      'credentialProviders',
      'accessProviders',
    ]);
    for (const list of ['accessProviders', 'credentialProviders', 'properties']) {
      expect(v1alpha1[list], list).toMatchObject({
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
      });
    }
    expect(v1alpha1.conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    expect(v1alpha1.accessProviders.maxItems).toBeUndefined();
    expect(v1alpha1.accessProviders.items.properties.cluster.properties['certificate-authority-data']).toMatchObject({
      type: 'string',
      format: 'byte',
    });
    expect(v1alpha1.accessProviders.items.properties.cluster.properties.extensions.items.properties.extension).toEqual({
      description: 'Provider-specific configuration (a JSON object, kept as is).',
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });

    const v1alpha2 = version('v1alpha2').schema.openAPIV3Schema.properties.status.properties;
    expect(Object.keys(v1alpha2)).toEqual(['conditions', 'version', 'properties', 'accessProviders']);
    expect(v1alpha2.accessProviders).toMatchObject({
      maxItems: 64,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    });
    expect(v1alpha2.conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    const cluster = v1alpha2.accessProviders.items.properties.cluster;
    expect(cluster.properties.server).toMatchObject({
      maxLength: 2048,
      'x-kubernetes-validations': [{ rule: "isURL(self) && url(self).getHost() != ''" }],
    });
    expect(cluster.properties['proxy-url']['x-kubernetes-validations'][0].rule).toContain(
      "['http', 'https', 'socks5']",
    );
    // The API server enforces the CEL rules; the JSON Schema patterns standing in for them are not copied.
    expect(cluster.properties.server.pattern).toBeUndefined();
    expect(cluster.properties['proxy-url'].pattern).toBeUndefined();
    expect(cluster.properties['certificate-authority']).toBeUndefined();
    expect(version('v1alpha2').additionalPrinterColumns.map((column: Node) => column.name)).toEqual([
      'Display Name',
      'Manager',
      'Version',
      'Healthy',
      'Age',
    ]);
  });

  test('the profiles the schemas accept fit the CRD: every key they use is declared there', () => {
    const check = (doc: Node, schema: Node, path: string): void => {
      if (schema['x-kubernetes-preserve-unknown-fields'] === true || doc === null || typeof doc !== 'object') {
        return;
      }
      if (Array.isArray(doc)) {
        for (const [index, item] of doc.entries()) check(item, schema.items, `${path}[${index}]`);
        return;
      }
      for (const [key, value] of Object.entries(doc)) {
        const child =
          schema.properties?.[key] ??
          (typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined);
        expect(child, `${path}.${key} is declared in the CRD (else the API server would prune it)`).toBeDefined();
        check(value as Node, child, `${path}.${key}`);
      }
    };
    for (const [name, profile] of [
      ['v1alpha1', upstreamProfileV1alpha1()],
      ['v1alpha2', upstreamProfileV1alpha2()],
    ] as const) {
      expect(validateDocument(`clusterprofile.${name}`, profile)).toEqual([]);
      const { metadata: _metadata, ...rest } = profile;
      check(rest, version(name).schema.openAPIV3Schema, '$');
    }
  });

  test('x-crd adds its x-kubernetes-* keys to the CRD node only; anything else there is refused', () => {
    const schema = {
      type: 'array',
      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      'x-crd': { 'x-kubernetes-list-type': 'set' },
    };
    expect(toStructural(schema, schema)).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'set' });
    expect(toStructural(schema, schema)['x-crd']).toBeUndefined();
    const other = { type: 'array', 'x-crd': { maxItems: 3 } };
    expect(() => toStructural(other, other)).toThrow(
      '#: x-crd may only add x-kubernetes-* keys the node does not have, got maxItems',
    );
    const clash = { type: 'array', 'x-kubernetes-list-type': 'atomic', 'x-crd': { 'x-kubernetes-list-type': 'set' } };
    expect(() => toStructural(clash, clash)).toThrow('got x-kubernetes-list-type');
  });

  test('the generator refuses what a structural schema cannot express, naming where', () => {
    const schema = { type: 'object', properties: { a: { anyOf: [{ type: 'string' }, { type: 'number' }] } } };
    expect(() => toStructural(schema, schema)).toThrow(
      '#/properties/a: anyOf cannot be expressed in a structural CRD schema',
    );
    const untyped = { type: 'object', properties: { b: { description: 'anything' } } };
    expect(() => toStructural(untyped, untyped)).toThrow(
      '#/properties/b: a structural schema needs a type on every node',
    );
    const nullable = { type: ['string', 'null'] };
    expect(toStructural(nullable, nullable)).toEqual({ type: 'string', nullable: true });
  });

  test('picks up every clusterprofile.<version> schema', () => {
    expect(readProfileSchemas().map((entry: Node) => entry.version)).toEqual(['v1alpha1', 'v1alpha2']);
  });
});
