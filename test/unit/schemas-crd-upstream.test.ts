/**
 * Our generated ClusterProfile CRD against upstream's (sigs.k8s.io/cluster-inventory-api), structurally: names, scope,
 * served/storage versions, and every schema keyword but descriptions at every path. Upstream, as checked-in copies
 * (test/fixtures/upstream/README.md): v1alpha1 from release v0.1.0's CRD file (sha256-pinned), v1alpha2 from the
 * kubebuilder markers at commit 2c9add1 (unreleased). A difference is a failure unless `intended` below lists it; the
 * same list is in docs/reference/schemas.md.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, test } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
// @ts-expect-error -- a plain ESM build script without type declarations
import { crdPath } from '../../scripts/generate-crd.mjs';

type Node = Record<string, any>;

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string): string => readFileSync(`${root}${file}`, 'utf8');

const V0_1_0 = {
  file: 'test/fixtures/upstream/cluster-inventory-api-v0.1.0/multicluster.x-k8s.io_clusterprofiles.yaml',
  sha256: '6ff09e298672dac644e85926774e1e5f9768c8a2c94b36e54408f737e05bd1c6',
};
const V1ALPHA2_FILE = 'test/fixtures/upstream/cluster-inventory-api-2c9add1/clusterprofile-v1alpha2.yaml';

const ours: Node = parse(read(crdPath));
const upstreamText = read(V0_1_0.file);
const upstreamDocs = parseAllDocuments(upstreamText).map((doc) => doc.toJS() as Node);
const upstream: Node = upstreamDocs[0]!;
const upstreamV1alpha2: Node = parse(read(V1ALPHA2_FILE));

/** Upstream's version of each name: v1alpha1 from the v0.1.0 CRD, v1alpha2 from the markers at 2c9add1. */
const upstreamVersions: Record<string, Node> = {
  v1alpha1: upstream.spec.versions.find((entry: Node) => entry.name === 'v1alpha1'),
  v1alpha2: upstreamV1alpha2.version,
};

/**
 * Differences on purpose, as `<version> <path> <keyword>` (a path as in {@link differences}): why each is there.
 * Descriptions are not compared (ours are written for `kubectl explain` and name this project's behaviour).
 */
const intended: Record<string, string> = {};

/** One schema difference: where, which keyword, upstream's value and ours (undefined: absent). */
interface Difference {
  path: string;
  keyword: string;
  upstream: unknown;
  ours: unknown;
}

/** A keyword's value in a comparable form: `required` is a set; key order never matters (JSON of sorted keys). */
function comparable(keyword: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const normalized = keyword === 'required' && Array.isArray(value) ? [...value].sort() : value;
  return JSON.stringify(normalized, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => a.localeCompare(b)))
      : item,
  );
}

/** Every keyword that differs between two schema nodes and their children, descriptions left out. */
function differences(theirs: Node | undefined, mine: Node | undefined, path = ''): Difference[] {
  const found: Difference[] = [];
  if (theirs === undefined || mine === undefined) {
    if (theirs !== mine)
      found.push({
        path: path || '.',
        keyword: '(node)',
        upstream: theirs === undefined ? undefined : 'present',
        ours: mine === undefined ? undefined : 'present',
      });
    return found;
  }
  const keywords = new Set([...Object.keys(theirs), ...Object.keys(mine)]);
  for (const keyword of [...keywords].sort()) {
    if (keyword === 'description') continue;
    if (keyword === 'properties') {
      const names = new Set([...Object.keys(theirs.properties ?? {}), ...Object.keys(mine.properties ?? {})]);
      for (const name of [...names].sort())
        found.push(...differences(theirs.properties?.[name], mine.properties?.[name], `${path}.${name}`));
    } else if (keyword === 'items' || keyword === 'additionalProperties') {
      const suffix = keyword === 'items' ? '[]' : '{}';
      found.push(...differences(theirs[keyword], mine[keyword], `${path}${suffix}`));
    } else if (comparable(keyword, theirs[keyword]) !== comparable(keyword, mine[keyword])) {
      found.push({ path: path || '.', keyword, upstream: theirs[keyword], ours: mine[keyword] });
    }
  }
  return found;
}

/** Every schema node with its path (`.status.accessProviders[]` for the items of a list). */
function* nodes(schema: Node, path = ''): Generator<[string, Node]> {
  yield [path || '.', schema];
  for (const [name, child] of Object.entries(schema.properties ?? {})) yield* nodes(child as Node, `${path}.${name}`);
  if (schema.items !== undefined) yield* nodes(schema.items, `${path}[]`);
  if (typeof schema.additionalProperties === 'object') yield* nodes(schema.additionalProperties, `${path}{}`);
}

/** The node at `path` (as {@link nodes} writes it), or undefined. */
function at(schema: Node, path: string): Node | undefined {
  let node: Node | undefined = schema;
  for (const step of path === '.' ? [] : (path.match(/\.[^.[\]{}]+|\[\]|\{\}/g) ?? [])) {
    if (step === '[]') node = node?.items;
    else if (step === '{}') node = node?.additionalProperties;
    else node = node?.properties?.[step.slice(1)];
  }
  return node;
}

function ourVersion(name: string): Node {
  return ours.spec.versions.find((entry: Node) => entry.name === name);
}

const listMarkers = ['x-kubernetes-list-type', 'x-kubernetes-list-map-keys', 'x-kubernetes-map-type'];

describe('the ClusterProfile CRD against upstream cluster-inventory-api', () => {
  test('the upstream copy is the pinned v0.1.0 file (see test/fixtures/upstream/README.md)', () => {
    expect(createHash('sha256').update(upstreamText).digest('hex')).toBe(V0_1_0.sha256);
    expect(upstreamDocs).toHaveLength(1);
    expect(upstream.metadata.name).toBe('clusterprofiles.multicluster.x-k8s.io');
    expect(upstreamV1alpha2.source.commit).toBe('2c9add11d437cd535d559a6d636800f4aa69a1cc');
  });

  test('has upstream’s group, names and scope (plus the multicluster category of upstream v1alpha2)', () => {
    expect(ours.metadata.name).toBe(upstream.metadata.name);
    expect(ours.spec.group).toBe(upstream.spec.group);
    expect(ours.spec.scope).toBe(upstream.spec.scope);
    expect(ours.spec.names).toEqual({ ...upstream.spec.names, ...upstreamV1alpha2.names });
  });

  test('serves upstream’s versions with upstream’s storage version and subresources: v1alpha1 (v0.1.0) stored, v1alpha2 (main) served', () => {
    const summary = (entry: Node): unknown[] => [
      entry.name,
      entry.served,
      entry.storage,
      entry.subresources,
      entry.additionalPrinterColumns,
    ];
    expect(ours.spec.versions.map(summary)).toEqual(Object.values(upstreamVersions).map(summary));
  });

  describe.each(Object.keys(upstreamVersions))('%s', (name) => {
    const theirs: Node = upstreamVersions[name]!.schema.openAPIV3Schema;
    const mine: Node = ourVersion(name).schema.openAPIV3Schema;

    test('has upstream’s list type, list-map keys and map type at every path where upstream has one, and nowhere else', () => {
      const markers = (schema: Node): Record<string, Record<string, unknown>> =>
        Object.fromEntries(
          [...nodes(schema)]
            .map(
              ([path, node]) =>
                [
                  path,
                  Object.fromEntries(listMarkers.filter((key) => key in node).map((key) => [key, node[key]])),
                ] as const,
            )
            .filter(([, found]) => Object.keys(found).length > 0),
        );
      const expected = markers(theirs);
      expect(Object.keys(expected).length, 'upstream has list markers to compare').toBeGreaterThan(0);
      for (const [path, found] of Object.entries(expected)) {
        const node = at(mine, path);
        expect(node, `${path} exists in ours`).toBeDefined();
        expect(
          Object.fromEntries(listMarkers.filter((key) => key in node!).map((key) => [key, node![key]])),
          path,
        ).toEqual(found);
      }
      expect(markers(mine)).toEqual(expected);
    });

    test('differs from upstream only where docs/reference/schemas.md says so (descriptions aside)', () => {
      const found = differences(theirs, mine).map((entry) => ({
        ...entry,
        key: `${name} ${entry.path} ${entry.keyword}`,
      }));
      const unexpected = found.filter((entry) => intended[entry.key] === undefined);
      expect(unexpected, 'differences from upstream not listed in `intended`').toEqual([]);
      const listed = Object.keys(intended).filter((key) => key.startsWith(`${name} `));
      expect(found.map((entry) => entry.key).sort(), 'every listed difference still exists').toEqual(listed.sort());
    });
  });

  test('the comparison finds a difference where there is one', () => {
    const theirs: Node = upstreamVersions.v1alpha1!.schema.openAPIV3Schema;
    const mine = structuredClone(ourVersion('v1alpha1').schema.openAPIV3Schema) as Node;
    delete mine.properties.status.properties.accessProviders['x-kubernetes-list-type'];
    mine.properties.status.properties.conditions.maxItems = 8;
    mine.properties.status.properties.properties.items.required.reverse(); // order of required does not matter
    expect(differences(theirs, mine)).toEqual([
      { path: '.status.accessProviders', keyword: 'x-kubernetes-list-type', upstream: 'map', ours: undefined },
      { path: '.status.conditions', keyword: 'maxItems', upstream: undefined, ours: 8 },
    ]);
    expect(at(mine, '.status.accessProviders[].cluster.extensions[].name')).toEqual({ type: 'string' });
  });
});
