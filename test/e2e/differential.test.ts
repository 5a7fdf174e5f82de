/**
 * Differential test: our library and the Go reference on the same inputs.
 *
 * - Resolution: `parseAccessConfig` + `resolveClusterAccess` (+ the KUBERNETES_EXEC_INFO `buildExecRequest` renders)
 *   against cluster-inventory-api v0.1.0 `NewFromFile` + `BuildConfigFromCP` (+ what client-go's exec authenticator
 *   would hand the plugin). Each case runs twice in Go: with a fresh load of the providers file per profile, and
 *   with one loaded config shared by all profiles (what a controller does; upstream mutates it). Ours must agree
 *   with the fresh run; the shared run shows upstream's mutation.
 * - Plugin output: `parseExecCredential` against client-go v0.35's exec decoding (its codec and checks, and a real
 *   exec authenticator whose plugin prints the same bytes).
 *
 * Any difference must belong to a listed class (LISTED below), each a row of the differences tables in
 * docs/explanation/upstream.md or docs/reference/exec.md. Seed: CPC_DIFF_SEED (printed), random cases: CPC_DIFF_CASES (400);
 * CPC_DIFF_VERBOSE=1 also lists the cases both refuse for reasons that do not correspond (validation order differs).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { isCredentialsError } from '../../src/base/errors.js';
import { parseAccessConfig } from '../../src/resolve/access-config.js';
import { parseExecCredential } from '../../src/exec/output.js';
import { buildExecRequest } from '../../src/exec/request.js';
import { resolveClusterAccess } from '../../src/resolve/cluster-access.js';
import type { ClusterProfile, ExecApiVersion, ResolvedClusterAccess } from '../../src/resolve/types.js';
import { e2eContext } from '../helpers/controlplane-e2e.js';
import { createTestCa } from '../helpers/tls.js';
import {
  handCases,
  randomCases,
  type Case,
  type OutputCase,
  type Pki,
  type ResolveCase,
} from './differential-cases.js';
import {
  goJson,
  runDriver,
  type DriverRequest,
  type DriverResponse,
  type GoConfigView,
  type GoCredentialView,
  type GoResolveResult,
} from './differential-driver.js';

/** Listed difference classes → the document whose differences table names them (in backticks). */
const LISTED: Readonly<Record<string, 'docs/explanation/upstream.md' | 'docs/reference/exec.md'>> = {
  'no-mutation': 'docs/explanation/upstream.md',
  'env-order': 'docs/explanation/upstream.md',
  'tls-fields-carried': 'docs/explanation/upstream.md',
  'install-hint-kept': 'docs/explanation/upstream.md',
  'validated-earlier': 'docs/explanation/upstream.md',
  'profile-schema': 'docs/explanation/upstream.md',
  'yaml-providers-file': 'docs/explanation/upstream.md',
  'field-name-case': 'docs/explanation/upstream.md',
  'duplicate-key-refused': 'docs/explanation/upstream.md',
  'nel-refused': 'docs/explanation/upstream.md',
  'upstream-panic': 'docs/explanation/upstream.md',
  'env-denied': 'docs/explanation/upstream.md',
  'insecure-refused': 'docs/explanation/upstream.md',
  'exec-info-config-null': 'docs/reference/exec.md',
};

interface View {
  host: string;
  caData: string;
  serverName: string;
  insecure: boolean;
  disableCompression: boolean;
  proxy: string;
  exec: GoConfigView['exec'];
  execInfo?: unknown;
  execInfoError?: string;
}

type Ours = { ok: true; view: View } | { ok: false; code: string; message: string };

interface Finding {
  classes: Set<string>;
  unexplained: string[];
  /** Both refused, for reasons that do not correspond (reported, not failed: validation order differs). */
  otherReason?: string;
}

const root = path.resolve(import.meta.dirname, '../..');
const seed = Number(process.env.CPC_DIFF_SEED ?? Math.floor(Math.random() * 2 ** 31));
const randomCount = Number(process.env.CPC_DIFF_CASES ?? 400);

function errorOf(error: unknown): { code: string; message: string } {
  if (isCredentialsError(error)) return { code: error.code, message: error.message };
  throw error;
}

function oursResolve(c: ResolveCase): Ours[] {
  let accessConfig: ReturnType<typeof parseAccessConfig>;
  try {
    accessConfig = parseAccessConfig(c.providersFile, 'case');
  } catch (error) {
    return c.profiles.map(() => ({ ok: false, ...errorOf(error) }));
  }
  // One parsed config for every profile: ours never mutates it (the shared run shows upstream does).
  return c.profiles.map((profile): Ours => {
    try {
      return { ok: true, view: viewOf(resolveClusterAccess(profile as ClusterProfile, accessConfig)) };
    } catch (error) {
      return { ok: false, ...errorOf(error) };
    }
  });
}

function viewOf(access: ResolvedClusterAccess): View {
  const c = access.cluster;
  const view: View = {
    host: c.server,
    caData: c['certificate-authority-data'] ?? '',
    serverName: c['tls-server-name'] ?? '',
    insecure: c['insecure-skip-tls-verify'] ?? false,
    disableCompression: c['disable-compression'] ?? false,
    proxy: c['proxy-url'] ?? '',
    exec: {
      command: access.exec.command,
      args: access.exec.args,
      env: access.exec.env,
      apiVersion: access.exec.apiVersion,
      installHint: access.exec.installHint ?? '',
      provideClusterInfo: access.exec.provideClusterInfo === true,
      interactiveMode: access.exec.interactiveMode,
      config: c.config === undefined ? null : c.config,
    },
  };
  try {
    view.execInfo = buildExecRequest(access.exec, access.cluster, { env: {} }).execInfo;
  } catch (error) {
    view.execInfoError = errorOf(error).message;
  }
  return view;
}

function oursOutput(c: OutputCase): GoCredentialView {
  try {
    const credential = parseExecCredential(c.stdout, c.apiVersion as ExecApiVersion);
    return {
      token: credential.token ?? '',
      hasCert: credential.clientCertificate !== undefined,
      expiresAt: credential.expiresAt ?? null,
    };
  } catch (error) {
    return { error: `${errorOf(error).code}: ${errorOf(error).message}`, token: '', hasCert: false, expiresAt: null };
  }
}

const PROVIDERS_FILE_KEYS = [
  'providers',
  'name',
  'execConfig',
  'profileSourcedCLIArgsPolicy',
  'profileSourcedEnvVarsPolicy',
  'command',
  'args',
  'env',
  'apiVersion',
  'installHint',
  'provideClusterInfo',
  'interactiveMode',
  'value',
];

/** Keys that Go's encoding/json matches to a field case-insensitively and we do not. */
function hasMiscasedKeys(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasMiscasedKeys);
  if (value === null || typeof value !== 'object') return false;
  return Object.entries(value).some(
    ([key, inner]) =>
      (!PROVIDERS_FILE_KEYS.includes(key) &&
        PROVIDERS_FILE_KEYS.some((known) => known.toLowerCase() === key.toLowerCase())) ||
      hasMiscasedKeys(inner),
  );
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Which of our codes correspond to where Go refused. */
function expectedCodes(go: GoResolveResult): string[] {
  const error = go.error ?? '';
  if (go.stage === 'providers') return ['ERR_ACCESS_CONFIG_PARSE', 'ERR_ACCESS_CONFIG_INVALID'];
  if (go.stage === 'profile') return ['ERR_PROFILE_INVALID'];
  if (error.startsWith('no matching cluster accessor')) return ['ERR_NO_MATCHING_PROVIDER'];
  if (error.startsWith('no exec config')) return ['ERR_NO_EXEC_CONFIG'];
  if (error.startsWith('failed to unmarshal additional')) return ['ERR_EXTENSION_INVALID'];
  if (error.startsWith('unsupported ProfileSourced')) return ['ERR_POLICY_UNSUPPORTED'];
  if (error.startsWith('failed to convert v1 Cluster')) return ['ERR_PROFILE_INVALID'];
  return [];
}

function compareResolve(c: ResolveCase, go: GoResolveResult, ours: Ours): Finding {
  const finding: Finding = { classes: new Set(), unexplained: [] };
  const miscased = hasMiscasedKeys(JSON.parse(isJson(c.providersFile) ? c.providersFile : '{}'));
  if (go.stage !== 'ok') {
    if (!ours.ok) {
      if (!expectedCodes(go).includes(ours.code))
        finding.otherReason = `Go ${go.stage}: ${go.error} / ours ${ours.code}: ${ours.message}`;
    } else if (go.stage === 'panic') {
      finding.classes.add('upstream-panic');
    } else if (go.stage === 'providers' && !isJson(c.providersFile)) {
      finding.classes.add('yaml-providers-file');
    } else {
      finding.unexplained.push(`Go refused (${go.stage}: ${go.error}); we accepted`);
    }
    return finding;
  }
  const g = go.config as GoConfigView;
  if (!ours.ok) {
    // What upstream builds but fails on when used, and we refuse for that same reason.
    const failsWhenUsed =
      (ours.code === 'ERR_EXEC_CONFIG_INVALID' &&
        (g.exec.command === '' || /invalid apiVersion/.test(`${g.clientError} ${g.execInfoError}`))) ||
      (ours.code === 'ERR_PROFILE_INVALID' && /proxy-url/.test(ours.message) && g.proxyError !== undefined);
    if (failsWhenUsed) finding.classes.add('validated-earlier');
    else if (miscased) finding.classes.add('field-name-case');
    // The schema's own issues start with a JSON path.
    else if (
      ours.code === 'ERR_PROFILE_INVALID' &&
      /^ClusterProfile is invalid: \$|has no cluster|has no server$/.test(ours.message)
    )
      finding.classes.add('profile-schema');
    else if (ours.code === 'ERR_EXTENSION_INVALID' && ours.message.includes('U+0085'))
      finding.classes.add('nel-refused');
    else if (ours.code === 'ERR_PROFILE_ENV_DENIED') finding.classes.add('env-denied');
    else if (ours.code === 'ERR_PROFILE_INSECURE_TLS_DENIED') finding.classes.add('insecure-refused');
    else if (ours.code === 'ERR_ACCESS_CONFIG_PARSE' && ours.message.includes('a duplicate key'))
      finding.classes.add('duplicate-key-refused');
    else finding.unexplained.push(`Go accepted; we refused: ${ours.code}: ${ours.message}`);
    return finding;
  }
  const o = ours.view;
  const differ = (field: string, a: unknown, b: unknown) =>
    finding.unexplained.push(`${field}: Go ${JSON.stringify(a)} / ours ${JSON.stringify(b)}`);
  for (const field of ['host', 'caData', 'proxy'] as const) {
    if (g[field] !== o[field]) differ(field, g[field], o[field]);
  }
  for (const field of ['serverName', 'insecure', 'disableCompression'] as const) {
    if (g[field] !== o[field]) {
      if (g[field] === '' || g[field] === false) finding.classes.add('tls-fields-carried');
      else differ(field, g[field], o[field]);
    }
  }
  for (const field of ['command', 'apiVersion', 'provideClusterInfo', 'interactiveMode', 'config', 'args'] as const) {
    if (!isDeepStrictEqual(g.exec[field], o.exec[field])) differ(`exec.${field}`, g.exec[field], o.exec[field]);
  }
  if (!isDeepStrictEqual(g.exec.env, o.exec.env)) {
    const sorted = (env: { name: string; value: string }[]) => env.map((v) => `${v.name}=${v.value}`).sort();
    if (isDeepStrictEqual(sorted(g.exec.env), sorted(o.exec.env))) finding.classes.add('env-order');
    else differ('exec.env', g.exec.env, o.exec.env);
  }
  if (g.exec.installHint !== o.exec.installHint) {
    if (g.exec.installHint === '') finding.classes.add('install-hint-kept');
    else differ('exec.installHint', g.exec.installHint, o.exec.installHint);
  }
  if (g.execInfoError !== undefined || o.execInfoError !== undefined) {
    if (g.execInfoError === undefined || o.execInfoError === undefined)
      differ('execInfo', g.execInfoError ?? g.execInfo, o.execInfoError ?? o.execInfo);
  } else {
    const goInfo = g.execInfo as { spec: { cluster?: Record<string, unknown> } };
    const ourInfo = structuredClone(o.execInfo) as { spec: { cluster?: Record<string, unknown> } };
    const ourCluster = ourInfo.spec.cluster;
    if (ourCluster !== undefined) {
      for (const key of ['tls-server-name', 'insecure-skip-tls-verify', 'disable-compression']) {
        if (key in ourCluster && !(key in (goInfo.spec.cluster ?? {}))) {
          finding.classes.add('tls-fields-carried');
          delete ourCluster[key];
        }
      }
      if (goInfo.spec.cluster?.config === null && !('config' in ourCluster)) {
        finding.classes.add('exec-info-config-null');
        ourCluster.config = null;
      }
    }
    if (!isDeepStrictEqual(goInfo, ourInfo)) differ('execInfo', goInfo, o.execInfo);
  }
  if (finding.unexplained.length > 0 && miscased) {
    finding.unexplained = [];
    finding.classes.add('field-name-case');
  }
  return finding;
}

function compareOutput(go: GoCredentialView, ours: GoCredentialView): Finding {
  const finding: Finding = { classes: new Set(), unexplained: [] };
  if (go.error !== undefined || ours.error !== undefined) {
    if (go.error === undefined)
      finding.unexplained.push(`Go accepted (token ${JSON.stringify(go.token)}); we refused: ${ours.error}`);
    else if (ours.error === undefined) finding.unexplained.push(`Go refused (${go.error}); we accepted`);
    return finding;
  }
  for (const field of ['token', 'hasCert', 'expiresAt'] as const) {
    if (go[field] !== ours[field])
      finding.unexplained.push(`${field}: Go ${JSON.stringify(go[field])} / ours ${JSON.stringify(ours[field])}`);
  }
  return finding;
}

/** A Go result with its env sorted: upstream's order is random, so two runs differ in it. */
function withSortedEnv(result: GoResolveResult | undefined): unknown {
  if (result?.config === undefined) return result;
  const env = [...result.config.exec.env].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { ...result, config: { ...result.config, exec: { ...result.config.exec, env } } };
}

interface Outcome {
  c: Case;
  findings: Finding[];
  /** Resolve cases: per profile, Go's fresh and shared runs and ours. */
  calls?: { fresh: GoResolveResult; shared: GoResolveResult; ours: Ours }[];
}

/** Classes a hand case need not list: upstream's env order is random; most cases have no exec extension. */
const INCIDENTAL = ['env-order', 'exec-info-config-null'];

describe('differential: cluster-inventory-api v0.1.0 and client-go v0.35 vs this library', () => {
  let outcomes: Outcome[] = [];
  let resolveCalls = 0;

  beforeAll(async () => {
    const ca = await createTestCa('differential-ca');
    const pki: Pki = {
      caBase64: ca.certBase64,
      alice: await ca.issueClientCert('alice'),
      bob: await ca.issueClientCert('bob'),
    };
    const cases: Case[] = [...handCases(pki), ...randomCases(seed, randomCount, pki)];
    const requests: DriverRequest[] = cases.flatMap((c, index): DriverRequest[] =>
      c.kind === 'resolve'
        ? [
            {
              id: `${index}/fresh`,
              kind: 'resolve',
              providersFile: c.providersFile,
              profiles: c.profiles.map(goJson),
              shared: false,
            },
            {
              id: `${index}/shared`,
              kind: 'resolve',
              providersFile: c.providersFile,
              profiles: c.profiles.map(goJson),
              shared: true,
            },
          ]
        : [{ id: `${index}/output`, kind: 'output', apiVersion: c.apiVersion, stdout: c.stdout }],
    );
    const responses = new Map<string, DriverResponse>();
    for (const response of await runDriver(e2eContext().binaries.differential, requests))
      responses.set(response.id, response);

    outcomes = cases.map((c, index): Outcome => {
      if (c.kind === 'resolve') {
        const fresh = responses.get(`${index}/fresh`)?.resolve ?? [];
        const shared = responses.get(`${index}/shared`)?.resolve ?? [];
        const ours = oursResolve(c);
        resolveCalls += ours.length;
        return {
          c,
          calls: ours.map((mine, call) => ({
            fresh: fresh[call] as GoResolveResult,
            shared: shared[call] as GoResolveResult,
            ours: mine,
          })),
          findings: ours.map((mine, call) => {
            const finding = compareResolve(c, fresh[call] as GoResolveResult, mine);
            if (!isDeepStrictEqual(withSortedEnv(fresh[call]), withSortedEnv(shared[call])))
              finding.classes.add('no-mutation');
            return finding;
          }),
        };
      }
      const output = responses.get(`${index}/output`)?.output;
      if (output === undefined) throw new Error(`no Go answer for ${c.name}`);
      // The driver's replica of exec.go's decoding must agree with the real authenticator.
      const self = compareOutput(output.authenticator, { ...output.decode, expiresAt: null });
      if (self.unexplained.length > 0)
        throw new Error(`driver self-check failed for ${c.name}: ${self.unexplained.join('; ')}`);
      return { c, findings: [compareOutput(output.decode, oursOutput(c))] };
    });

    const counts = new Map<string, number>();
    let agreements = 0;
    let otherReasons = 0;
    let unexplained = 0;
    for (const { findings } of outcomes) {
      for (const finding of findings) {
        if (finding.unexplained.length > 0) unexplained++;
        else if (finding.classes.size === 0) agreements++;
        for (const cls of finding.classes) counts.set(cls, (counts.get(cls) ?? 0) + 1);
        if (finding.otherReason !== undefined) otherReasons++;
      }
    }
    const outputs = outcomes.filter((o) => o.c.kind === 'output').length;
    process.stdout.write(
      [
        `differential: seed ${seed} (CPC_DIFF_SEED=${seed} replays it), ${cases.length} cases (${cases.length - randomCount} hand-written, ${randomCount} random)`,
        `  comparisons: ${resolveCalls + outputs} (${resolveCalls} resolutions, ${outputs} plugin outputs)`,
        `  agreements: ${agreements}; with listed differences only: ${resolveCalls + outputs - agreements - unexplained}; unlisted: ${unexplained}`,
        `  both refused, for reasons that do not correspond: ${otherReasons}`,
        ...(process.env.CPC_DIFF_VERBOSE === '1'
          ? outcomes.flatMap(({ c, findings }) =>
              findings.flatMap((f) => (f.otherReason === undefined ? [] : [`    ${c.name}: ${f.otherReason}`])),
            )
          : []),
        ...[...counts].sort().map(([cls, n]) => `  listed ${cls}: ${n}`),
        '',
      ].join('\n'),
    );
  });

  it('finds no difference outside the listed classes', () => {
    const problems = outcomes.flatMap(({ c, findings }) =>
      findings.flatMap((finding, call) =>
        finding.unexplained.map(
          (problem) =>
            `${c.name}${c.kind === 'resolve' && c.profiles.length > 1 ? ` (call ${call + 1})` : ''}: ${problem}\n  case: ${JSON.stringify(c).slice(0, 1500)}`,
        ),
      ),
    );
    expect(problems.slice(0, 15).join('\n\n'), `${problems.length} unlisted differences (seed ${seed})`).toBe('');
  });

  it('finds exactly the expected classes on each hand-written case (env-order and exec-info-config-null unless named)', () => {
    const mismatches = outcomes
      .filter(({ c }) => c.expect !== undefined)
      .flatMap(({ c, findings }) => {
        const found = new Set(
          findings.flatMap((f) => [...f.classes]).filter((cls) => !INCIDENTAL.includes(cls) || c.expect?.includes(cls)),
        );
        const expected = new Set(c.expect);
        return isDeepStrictEqual(found, expected)
          ? []
          : [`${c.name}: expected [${[...expected].join(', ')}], found [${[...found].join(', ')}]`];
      });
    expect(mismatches).toEqual([]);
  });

  it('shows upstream’s mutation in the shared run: profile x’s extensions leak into profile y, never in ours', () => {
    const call = (name: string, index: number) => {
      const found = outcomes.find(({ c }) => c.name === name)?.calls?.[index];
      if (found === undefined) throw new Error(`no case ${name}`);
      return found;
    };
    const args = call('Append: profile x’s args leak into profile y', 1);
    expect(args.fresh.config?.exec.args).toEqual(['--base']);
    expect(args.shared.config?.exec.args).toEqual(['--base', '--cluster=x']);
    expect(args.ours.ok && args.ours.view.exec.args).toEqual(['--base']);
    const again = call('Append: args accumulate when the same profile is resolved twice', 1);
    expect(again.shared.config?.exec.args).toEqual(['--base', '--cluster=x', '--cluster=x']);
    expect(again.ours.ok && again.ours.view.exec.args).toEqual(['--base', '--cluster=x']);
    const extra = call('AppendIfNotExists: profile x’s extra variables leak into profile y', 1);
    expect(extra.shared.config?.exec.env).toContainEqual({ name: 'X_ONLY', value: 'x' });
    expect(extra.ours.ok && extra.ours.view.exec.env).toEqual([{ name: 'FILE', value: 'file' }]);
    const replaced = call('Replace: profile x’s value replaces the file’s for profile y', 1);
    expect(replaced.shared.config?.exec.env).toEqual([{ name: 'FILE', value: 'x' }]);
    expect(replaced.fresh.config?.exec.env).toEqual([{ name: 'FILE', value: 'file' }]);
    expect(replaced.ours.ok && replaced.ours.view.exec.env).toEqual([{ name: 'FILE', value: 'file' }]);
  });

  it('shows upstream panicking on a null additional-envs payload under an env policy, where ours adds nothing', () => {
    const nulls = outcomes.find(({ c }) => c.name === 'null payloads add nothing')?.calls?.[0];
    expect(nulls?.fresh).toMatchObject({ stage: 'panic', error: 'assignment to entry in nil map' });
    expect(nulls?.ours.ok && nulls.ours.view.exec.env).toEqual([{ name: 'FILE', value: 'file' }]);
  });

  it('names every listed class in the differences table of its document', async () => {
    for (const [cls, doc] of Object.entries(LISTED)) {
      const text = await readFile(path.join(root, doc), 'utf8');
      const table = text.slice(text.search(/^## Differences/m));
      expect(table, `${cls} in ${doc}`).toContain(`\`${cls}\``);
    }
    const used = new Set(outcomes.flatMap(({ findings }) => findings.flatMap((f) => [...f.classes])));
    for (const cls of used) expect(Object.keys(LISTED)).toContain(cls);
  });
});
