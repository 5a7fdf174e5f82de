// Generates schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml, the ClusterProfile CRD, from the JSON Schemas
// schemas/clusterprofile.<version>.schema.json (one CRD version each): the schemas stay the single source of truth.
//
//   npm run schemas:crd            write the CRD
//   node scripts/generate-crd.mjs --check   exit 1 if the committed CRD differs from what the schemas give
//
// The conversion yields a structural schema (what apiextensions.k8s.io/v1 requires): $refs inlined, a type on every
// node, nullable instead of a "null" type, const as a one-value enum, base64 strings as format: byte, the object's
// apiVersion/kind/metadata as plain string/string/object; x-kubernetes-* keys pass through; a pattern standing in for a
// CEL rule (x-kubernetes-validations on the same node) is left to the rule; `x-crd` holds x-kubernetes-* keys for the
// CRD only (the validators compiled from the schemas do not enforce them). Anything a structural schema cannot express
// (anyOf, not, if, ...) is an error here rather than a surprise on the API server.
//
// The list types, list-map keys, limits and CEL rules in the schemas follow upstream (sigs.k8s.io/cluster-inventory-api);
// test/unit/schemas-crd-upstream.test.ts compares the result with upstream, per version:
//   v1alpha1  release v0.1.0 (same CRD through v0.1.2): config/crd/bases/multicluster.x-k8s.io_clusterprofiles.yaml
//   v1alpha2  not released; the kubebuilder markers of apis/v1alpha2/clusterprofile_types.go at commit
//             2c9add11d437cd535d559a6d636800f4aa69a1cc (v1alpha2 work toward v0.2.0)
import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

const root = fileURLToPath(new URL('..', import.meta.url));
export const crdPath = 'schemas/crd/multicluster.x-k8s.io_clusterprofiles.yaml';

/**
 * The version the API server stores: v1alpha1, as upstream (v0.1.0 serves only v1alpha1; its v0.2.0 upgrade notes,
 * sigs.k8s.io/cluster-inventory-api/docs/api-versions.md at 5d1c871 on main, keep v1alpha1 the storage version with
 * v1alpha2 served alongside). Why: docs/reference/schemas.md, "CRD generation rules".
 */
const storageVersion = 'v1alpha1';

/** The upstream sources the schemas follow (docs/reference/schemas.md, "Upstream it follows"). */
const upstreamPins =
  'sigs.k8s.io/cluster-inventory-api v0.1.0 (v1alpha1), apis/v1alpha2 markers at 2c9add11d437cd535d559a6d636800f4aa69a1cc (v1alpha2)';

/** Printer columns per version, as upstream's kubebuilder markers declare them. */
const printerColumns = {
  v1alpha2: [
    { name: 'Display Name', type: 'string', jsonPath: '.spec.displayName' },
    { name: 'Manager', type: 'string', jsonPath: '.spec.clusterManager.name' },
    { name: 'Version', type: 'string', jsonPath: '.status.version.kubernetes' },
    { name: 'Healthy', type: 'string', jsonPath: '.status.conditions[?(@.type=="ControlPlaneHealthy")].status' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};

/** Keywords copied as they are. */
const copied = new Set([
  'type',
  'format',
  'description',
  'required',
  'enum',
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'minProperties',
  'maxProperties',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'uniqueItems',
]);

/** Keywords with no meaning for the API server, dropped. */
const dropped = new Set(['$schema', '$id', '$defs', '$comment', 'title', 'examples', 'deprecated', 'x-messages']);

function isForbidden(schema) {
  return schema === false || (schema?.not !== undefined && Object.keys(schema.not).length === 0);
}

function resolveRef(ref, rootSchema, where) {
  if (!ref.startsWith('#/')) {
    throw new Error(`${where}: only local $refs can be inlined, got ${ref}`);
  }
  let node = rootSchema;
  for (const raw of ref.slice(2).split('/')) {
    node = node?.[raw.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  if (node === undefined) {
    throw new Error(`${where}: $ref ${ref} does not resolve`);
  }
  return node;
}

/** One JSON Schema node as an OpenAPI v3 structural schema node. */
export function toStructural(schema, rootSchema, where = '#', depth = 0) {
  if (depth > 64) {
    throw new Error(`${where}: recursive $ref: structural schemas cannot recurse`);
  }
  if (schema.$ref !== undefined) {
    const { $ref, ...rest } = schema;
    return toStructural({ ...resolveRef($ref, rootSchema, where), ...rest }, rootSchema, where, depth + 1);
  }
  const out = {};
  for (const [key, value] of Object.entries(schema)) {
    if (dropped.has(key)) {
      continue;
    }
    if (copied.has(key) || key.startsWith('x-kubernetes-')) {
      out[key] = structuredClone(value);
    } else if (key === 'x-crd') {
      for (const [name, marker] of Object.entries(value)) {
        if (!name.startsWith('x-kubernetes-') || schema[name] !== undefined) {
          throw new Error(`${where}: x-crd may only add x-kubernetes-* keys the node does not have, got ${name}`);
        }
        out[name] = structuredClone(marker);
      }
    } else if (key === 'const') {
      out.enum = [value];
    } else if (key === 'contentEncoding') {
      if (value !== 'base64') {
        throw new Error(`${where}: contentEncoding ${value} has no OpenAPI equivalent`);
      }
      out.format = 'byte';
    } else if (key === 'properties') {
      // A property the schema forbids (`"not": {}`, e.g. credentialProviders in v1alpha2) is simply left out: the API
      // server prunes unknown fields.
      out.properties = Object.fromEntries(
        Object.entries(value)
          .filter(([, child]) => !isForbidden(child))
          .map(([name, child]) => [name, toStructural(child, rootSchema, `${where}/properties/${name}`, depth)]),
      );
    } else if (key === 'items') {
      out.items = toStructural(value, rootSchema, `${where}/items`, depth);
    } else if (key === 'additionalProperties') {
      if (typeof value === 'boolean') {
        continue; // true is the default; false cannot be combined with properties and pruning does its job anyway
      }
      out.additionalProperties = toStructural(value, rootSchema, `${where}/additionalProperties`, depth);
    } else {
      throw new Error(`${where}: ${key} cannot be expressed in a structural CRD schema`);
    }
  }
  if (schema.contentEncoding !== undefined) {
    delete out.pattern; // format: byte already checks base64
  }
  if (out['x-kubernetes-validations'] !== undefined) {
    // The CEL rule is what the API server enforces (as upstream's CRD does); the pattern next to it is its stand-in for
    // the JSON Schema validators, which cannot run CEL.
    delete out.pattern;
  }
  if (Array.isArray(out.type)) {
    const types = out.type.filter((type) => type !== 'null');
    if (types.length !== 1) {
      throw new Error(`${where}: a structural schema has exactly one type, got ${JSON.stringify(out.type)}`);
    }
    out.type = types[0];
    if (types.length !== schema.type.length) {
      out.nullable = true;
    }
  }
  if (out.type === undefined && out.enum !== undefined) {
    const kinds = new Set(out.enum.map((item) => typeof item));
    if (kinds.size === 1 && ['string', 'boolean', 'number'].includes([...kinds][0])) {
      out.type = [...kinds][0];
    }
  }
  if (
    out.type === undefined &&
    out['x-kubernetes-preserve-unknown-fields'] !== true &&
    out['x-kubernetes-int-or-string'] !== true
  ) {
    throw new Error(`${where}: a structural schema needs a type on every node`);
  }
  if (out.properties !== undefined && out.additionalProperties !== undefined) {
    throw new Error(`${where}: properties and additionalProperties cannot be combined in a structural schema`);
  }
  return out;
}

/** The openAPIV3Schema of one ClusterProfile version. */
export function versionSchema(schema) {
  const structural = toStructural(schema, schema);
  structural.description = 'ClusterProfile represents a member cluster of a fleet (KEP-4322, cluster inventory).';
  // The API server owns these: TypeMeta strings and an opaque metadata object (it validates ObjectMeta itself).
  structural.properties.apiVersion = {
    description: 'APIVersion defines the versioned schema of this representation of an object.',
    type: 'string',
  };
  structural.properties.kind = {
    description: 'Kind is a string value representing the REST resource this object represents.',
    type: 'string',
  };
  structural.properties.metadata = { type: 'object' };
  structural.required = (structural.required ?? []).filter(
    (name) => !['apiVersion', 'kind', 'metadata'].includes(name),
  );
  return structural;
}

/** The ClusterProfile schemas, by version, in version order. */
export function readProfileSchemas(dir = `${root}schemas`) {
  return readdirSync(dir)
    .map((file) => /^clusterprofile\.(v\w+)\.schema\.json$/.exec(file))
    .filter((match) => match !== null)
    .map((match) => ({ version: match[1], schema: JSON.parse(readFileSync(`${dir}/${match[0]}`, 'utf8')) }))
    .sort((a, b) => a.version.localeCompare(b.version));
}

/** The CRD manifest (YAML text) for the given schemas. */
export function generateCrd(profiles = readProfileSchemas()) {
  if (!profiles.some(({ version }) => version === storageVersion)) {
    throw new Error(`no schema for the storage version ${storageVersion}`);
  }
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'clusterprofiles.multicluster.x-k8s.io' },
    spec: {
      group: 'multicluster.x-k8s.io',
      names: {
        kind: 'ClusterProfile',
        listKind: 'ClusterProfileList',
        plural: 'clusterprofiles',
        singular: 'clusterprofile',
        categories: ['multicluster'],
      },
      scope: 'Namespaced',
      versions: profiles.map(({ version, schema }) => ({
        name: version,
        ...(printerColumns[version] === undefined ? {} : { additionalPrinterColumns: printerColumns[version] }),
        schema: { openAPIV3Schema: versionSchema(schema) },
        served: true,
        storage: version === storageVersion,
        subresources: { status: {} },
      })),
    },
  };
  const sources = profiles.map(({ version }) => `schemas/clusterprofile.${version}.schema.json`).join(', ');
  return [
    `# Generated by scripts/generate-crd.mjs from ${sources}: do not edit.`,
    '# Regenerate with `npm run schemas:crd`.',
    `# Upstream's list types, limits and rules: ${upstreamPins}.`,
    '---',
    stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false }),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = generateCrd();
  const target = `${root}${crdPath}`;
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      // missing: differs
    }
    if (current !== text) {
      console.error(`${crdPath} is out of date: run npm run schemas:crd`);
      process.exit(1);
    }
  } else {
    mkdirSync(`${root}schemas/crd`, { recursive: true });
    writeFileSync(target, text);
  }
}
