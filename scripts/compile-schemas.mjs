// Precompiles every schemas/<id>.schema.json into one ESM TypeScript module, src/generated/validators.ts (git-ignored),
// with ajv's standalone code generation, and each schema alone into src/generated/validator.<id>.ts (for a caller that
// needs one schema: a plugin's cache miss checks its exec input without loading the other schemas' 200 KB). tsc emits it to dist/generated/ with its .d.ts, esbuild bundles it into each
// binary; at run time no schema is compiled and no part of ajv is loaded (a plugin start stays fast).
//
// A new wire format needs no edit here: drop schemas/<id>.schema.json (JSON Schema 2020-12) and rebuild; `<id>` becomes
// a SchemaId. Formats come from src/schemas/formats.ts (Go semantics); `x-...` keys are annotations, and
// `x-messages` (docs/reference/schemas.md) replaces ajv's message for one keyword of the schema object that holds it.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Ajv2020Module from 'ajv/dist/2020.js';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { _ } from 'ajv';
import { formats } from '../src/schemas/formats.ts';

const Ajv2020 = Ajv2020Module.default;
const standaloneCode = standaloneModule.default;

const root = fileURLToPath(new URL('..', import.meta.url));
const schemaDir = `${root}schemas`;
const outFile = `${root}src/generated/validators.ts`;

/** Every schema file, sorted, with its id (the file name without `.schema.json`). */
export function listSchemas(dir = schemaDir) {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.schema.json'))
    .sort()
    .map((file) => ({ id: file.slice(0, -'.schema.json'.length), file: `${dir}/${file}` }));
}

const schemaMaps = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const schemaLists = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const schemaValues = [
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
];

/** Calls `visit(schemaObject, pointer)` for every schema object in `schema`, pointers as ajv's schemaPath writes them. */
export function walkSchema(schema, visit, pointer = '#') {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    return;
  }
  visit(schema, pointer);
  // As ajv writes schemaPath segments (its escapeFragment): JSON-pointer escaped, then URI-encoded.
  const escapeSegment = (key) => encodeURIComponent(key.replaceAll('~', '~0').replaceAll('/', '~1'));
  for (const key of schemaMaps) {
    for (const [name, child] of Object.entries(schema[key] ?? {})) {
      walkSchema(child, visit, `${pointer}/${key}/${escapeSegment(name)}`);
    }
  }
  for (const key of schemaLists) {
    for (const [index, child] of (schema[key] ?? []).entries()) walkSchema(child, visit, `${pointer}/${key}/${index}`);
  }
  for (const key of schemaValues) {
    walkSchema(schema[key], visit, `${pointer}/${key}`);
  }
}

/**
 * `x-...` keywords that validate (all other `x-...` keys are annotations). Their generated code calls helpers of
 * src/schemas/runtime.ts, imported by name into the generated module.
 */
const validatingKeywords = [
  {
    // Kubernetes list-map keys (listType=map): no two items with the same key values, as the API server enforces.
    keyword: 'x-kubernetes-list-map-keys',
    type: 'array',
    schemaType: 'array',
    error: {
      message: 'must not contain two items with the same key',
      params: ({ params, schemaCode }) =>
        _`{first: ${params.duplicate}[0], duplicate: ${params.duplicate}[1], keys: ${schemaCode}}`,
    },
    code(cxt) {
      const duplicate = cxt.gen.const('duplicate', _`findDuplicateListMapKey(${cxt.data}, ${cxt.schemaCode})`);
      cxt.setParams({ duplicate });
      cxt.fail(_`${duplicate} !== null`);
    },
  },
];

/**
 * A copy of `schema` with every local `$ref` replaced by (a copy of) its target, and `$defs` dropped. Each error's
 * schemaPath is then a pointer from the schema's root along the document's own shape, the same for every use of a
 * definition, which is what the `x-messages` table is keyed by (ajv would otherwise report paths relative to a
 * definition it compiled as a separate function). Recursive definitions are not supported.
 */
export function inlineRefs(schema, node = schema, seen = []) {
  if (Array.isArray(node)) {
    return node.map((item) => inlineRefs(schema, item, seen));
  }
  if (node === null || typeof node !== 'object') {
    return node;
  }
  if (typeof node.$ref === 'string') {
    const { $ref: ref, ...siblings } = node;
    if (!ref.startsWith('#/')) {
      throw new Error(`only local $refs are supported, got ${ref}`);
    }
    if (seen.includes(ref)) {
      throw new Error(`recursive $ref ${ref} is not supported`);
    }
    let target = schema;
    for (const raw of ref.slice(2).split('/')) {
      target = target?.[raw.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    if (target === undefined) {
      throw new Error(`$ref ${ref} does not resolve`);
    }
    return inlineRefs(schema, { ...target, ...siblings }, [...seen, ref]);
  }
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (node === schema && key === '$defs') {
      continue;
    }
    // const/enum/default/examples hold data, not schemas: copied as they are.
    out[key] = ['const', 'enum', 'default', 'examples'].includes(key) ? value : inlineRefs(schema, value, seen);
  }
  return out;
}

/** Documentation-only keywords, dropped from the generated code (they would only make it bigger). */
const documentation = ['title', 'description', '$comment', 'examples'];

/** The generated module's source for the given schemas. */
export function generate(schemas) {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: true,
    // src/schemas/index.ts words its own messages; ajv's would only make the module bigger.
    messages: false,
    code: { source: true, esm: true, formats: _`formats` },
  });
  for (const [name, format] of Object.entries(formats)) {
    ajv.addFormat(name, format);
  }
  const annotations = new Set();
  const documents = schemas.map(({ id, file }) => {
    let schema;
    try {
      schema = inlineRefs(JSON.parse(readFileSync(file, 'utf8')));
    } catch (error) {
      throw new Error(`${file}: ${error.message}`, { cause: error });
    }
    const messages = {};
    walkSchema(schema, (node, pointer) => {
      for (const key of documentation) {
        delete node[key];
      }
      for (const key of Object.keys(node).filter((key) => key.startsWith('x-'))) {
        annotations.add(key);
      }
      if (node['x-messages'] !== undefined) {
        messages[pointer] = node['x-messages'];
      }
    });
    return { id, schema, messages };
  });
  for (const definition of validatingKeywords) {
    ajv.addKeyword(definition);
    annotations.delete(definition.keyword);
  }
  for (const keyword of annotations) {
    ajv.addKeyword({ keyword });
  }
  const exportsByName = {};
  documents.forEach(({ id, schema }, index) => {
    const { $id: _ignored, $schema: _draft, ...body } = schema;
    ajv.addSchema(body, id);
    exportsByName[`validate${index}`] = id;
  });
  let code = standaloneCode(ajv, exportsByName);

  const runtime = {
    'require("ajv/dist/runtime/ucs2length").default': 'ucs2length',
    'require("ajv/dist/runtime/equal").default': 'deepEqual',
  };
  for (const [from, to] of Object.entries(runtime)) {
    code = code.replaceAll(from, to);
  }
  // The same error bookkeeping, hundreds of times over: shorter equivalents (half the module), so a plugin start parses
  // less. Sites that do not match exactly (e.g. a string holding a comma or a brace) keep ajv's longer form.
  code = code.replace(
    /if\(vErrors === null\)\{vErrors = \[(err\d+)\];\}else \{vErrors\.push\(\1\);\}/g,
    '(vErrors ??= []).push($1);',
  );
  code = code.replace(
    /const (err\d+) = \{instancePath(?::([^,]+))?,schemaPath:("[^"]*"),keyword:("[^"]*"),params:(\{[^}]*\})\};\(vErrors \?\?= \[\]\)\.push\(\1\);/g,
    (_match, _name, path, schemaPath, keyword, params) =>
      `vErrors = pushError(vErrors, ${path ?? 'instancePath'}, ${schemaPath}, ${keyword}, ${params});`,
  );
  const leftover = /require\("([^"]+)"\)/.exec(code);
  if (leftover !== null) {
    throw new Error(
      `a schema needs the ajv runtime module ${leftover[1]}: add an ESM equivalent to src/schemas/runtime.ts and map it in scripts/compile-schemas.mjs`,
    );
  }
  code = code.replace(/^"use strict";\n?/, '');

  const ids = documents.map(({ id }) => id);
  const messages = Object.fromEntries(documents.map(({ id, messages }) => [id, messages]));
  return [
    '// @ts-nocheck -- generated by scripts/compile-schemas.mjs from schemas/*.schema.json (ajv standalone): do not edit.',
    "import { deepEqual, findDuplicateListMapKey, formats, pushError, ucs2length } from '../schemas/runtime.js';",
    "import type { CompiledValidator } from '../schemas/runtime.js';",
    '',
    code.trim(),
    '',
    '/** The base name of a file `schemas/<id>.schema.json`. */',
    `export type SchemaId = ${ids.map((id) => JSON.stringify(id)).join(' | ')};`,
    '',
    `export const schemaIds: readonly SchemaId[] = ${JSON.stringify(ids)};`,
    '',
    'export const validators: { readonly [Id in SchemaId]: CompiledValidator } = {',
    ...ids.map((id, index) => `  ${JSON.stringify(id)}: validate${index},`),
    '};',
    '',
    '/** `x-messages` of each schema, by the JSON pointer of the schema object that holds it. */',
    'export const messages: { readonly [Id in SchemaId]: Readonly<Record<string, Readonly<Record<string, string | Readonly<Record<string, string>>>>>> } =',
    `  ${JSON.stringify(messages)};`,
    '',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const schemas = listSchemas();
  mkdirSync(`${root}src/generated`, { recursive: true });
  writeFileSync(outFile, generate(schemas));
  for (const schema of schemas) writeFileSync(`${root}src/generated/validator.${schema.id}.ts`, generate([schema]));
}
