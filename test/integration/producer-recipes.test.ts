/**
 * The producer recipes under examples/producers/ (a providers file and the profile each cluster manager writes) used
 * unchanged: `clusterprofile kubeconfig` (the built bin) turns each recipe's profile into a kubeconfig whose cluster
 * is the producer's and whose user runs the recipe's plugin; and the GKE recipe's gcp-auth-plugin, stood in for by a
 * script that prints what gcp-auth-plugin prints (GoogleCloudPlatform/gke-fleet-management gcp-auth-plugin/cmd/
 * main.go: a client.authentication.k8s.io/v1beta1 ExecCredential with a token and an expiry; on failure one stderr
 * line and exit 1), is run by our library's exec layer from the recipe's providers file. The real gcp-auth-plugin is
 * not served by the Go module proxy. The fleet on each recipe's profile: test/e2e/producer-recipes.test.ts.
 */
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  ExecAuthenticator,
  resolveClusterAccess,
  type AccessConfig,
  type ClusterProfile,
} from '../../src/library/index.js';
import { ROOT, runBin } from '../helpers/library-cli.js';

const RECIPES = join(ROOT, 'examples/producers');
const EXEC_EXTENSION = 'client.authentication.k8s.io/exec';

let dir: string;
let standIn: string;

interface Kubeconfig {
  clusters: Array<{ cluster: Record<string, unknown> & { extensions?: Array<{ name: string; extension: unknown }> } }>;
  users: Array<{ user: { exec: { apiVersion: string; command: string; args?: string[] } } }>;
}

async function recipe(name: string): Promise<{ profile: ClusterProfile; providers: AccessConfig }> {
  return {
    profile: parse(await readFile(join(RECIPES, name, 'clusterprofile.yaml'), 'utf8')) as ClusterProfile,
    providers: JSON.parse(await readFile(join(RECIPES, name, 'providers.json'), 'utf8')) as AccessConfig,
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-recipes-'));
  // What gcp-auth-plugin prints: one JSON line from encoding/json, no cluster in spec, a token and an expiry; its
  // error for a GOOGLE_APPLICATION_CREDENTIALS file that does not exist is oauth2/google's, prefixed by the plugin.
  standIn = join(dir, 'gcp-auth-plugin');
  await writeFile(
    standIn,
    `#!${process.execPath}
const fs = require('node:fs');
const file = process.env.GOOGLE_APPLICATION_CREDENTIALS;
if (file !== undefined && !fs.existsSync(file)) {
  process.stderr.write('failed to get default token source: google: error getting credentials using GOOGLE_APPLICATION_CREDENTIALS environment variable: open ' + file + ': no such file or directory\\n');
  process.exit(1);
}
const expirationTimestamp = new Date(Math.floor(Date.now() / 1000) * 1000 + 3599000).toISOString().replace('.000Z', 'Z');
process.stdout.write(JSON.stringify({ kind: 'ExecCredential', apiVersion: 'client.authentication.k8s.io/v1beta1', spec: { interactive: false }, status: { expirationTimestamp, token: 'ya29.stand-in-access-token' } }) + '\\n');
`,
  );
  await chmod(standIn, 0o755);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('each recipe, unchanged, through `clusterprofile kubeconfig`', async () => {
  const names = (await readdir(RECIPES)).sort();

  it('has a recipe per producer', () => {
    expect(names).toEqual(['gke', 'kubefleet', 'liqo', 'open-cluster-management']);
  });

  it.each(names)('%s: the producer’s cluster, the recipe’s plugin', async (name) => {
    const { profile, providers } = await recipe(name);
    const result = await runBin([
      'kubeconfig',
      '--profile',
      join(RECIPES, name, 'clusterprofile.yaml'),
      '--clusterprofile-provider-file',
      join(RECIPES, name, 'providers.json'),
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const kubeconfig = parse(result.stdout) as Kubeconfig;
    const provider = profile.status!.accessProviders![0]!;
    const entry = providers.providers!.find((p) => p.name === provider.name)!;
    const cluster = kubeconfig.clusters[0]!.cluster;
    expect(cluster['server']).toBe(provider.cluster!.server);
    expect(cluster['certificate-authority-data']).toBe(provider.cluster!['certificate-authority-data']);
    const exec = kubeconfig.users[0]!.user.exec;
    expect(exec).toMatchObject({ apiVersion: entry.execConfig!.apiVersion, command: entry.execConfig!.command });
    expect(exec.args ?? []).toEqual(entry.execConfig!.args ?? []);
    const extension = provider.cluster!.extensions?.find((e) => e.name === EXEC_EXTENSION)?.extension;
    expect(cluster.extensions?.find((e) => e.name === EXEC_EXTENSION)?.extension).toEqual(extension);
  });
});

describe('GKE: gcp-auth-plugin run by our library from the recipe’s providers file', () => {
  async function access(env: Record<string, string> = {}) {
    const { profile, providers } = await recipe('gke');
    for (const entry of providers.providers!) {
      entry.execConfig!.command = standIn;
      entry.execConfig!.env = Object.entries(env).map(([name, value]) => ({ name, value }));
    }
    return resolveClusterAccess(profile, providers);
  }

  it('the v1beta1 credential is taken with its expiry, for the `google` provider', async () => {
    const resolved = await access();
    expect(resolved.providerName).toBe('google');
    const credential = await new ExecAuthenticator(resolved.exec, resolved.cluster).getCredential();
    expect(credential.token).toBe('ya29.stand-in-access-token');
    expect(credential.expiresAt).toBeGreaterThan(Date.now() + 3_000_000);
  });

  it('without Google credentials, the plugin’s own sentence reaches the caller with a code', async () => {
    const resolved = await access({ GOOGLE_APPLICATION_CREDENTIALS: join(dir, 'no-such-adc.json') });
    const failure = await new ExecAuthenticator(resolved.exec, resolved.cluster).getCredential().then(
      () => undefined,
      (error: unknown) => error as { code?: string; message?: string },
    );
    expect(failure?.code).toBe('ERR_EXEC_FAILED');
    expect(failure?.message).toContain('google: error getting credentials using GOOGLE_APPLICATION_CREDENTIALS');
  });
});
