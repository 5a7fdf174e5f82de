// Runs the BUILT clusterprofile-oidc binary (bin stub -> dist/bin bundle) as a real child process, with a hook on
// its stderr so a test can play the person who reads the prompt (device code, login URL).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FlagValues } from '../../src/plugin/provider.js';
import type { OidcFlags } from '../../src/providers/oidc/settings.js';

/** The bin stub; OIDC_PLUGIN_BIN points elsewhere (e.g. a private build while others rebuild dist/). */
export const OIDC_BIN =
  process.env['OIDC_PLUGIN_BIN'] ?? fileURLToPath(new URL('../../bin/clusterprofile-oidc.mjs', import.meta.url));

export interface OidcRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function oidcExecInfo(
  config: Record<string, unknown>,
  interactive = false,
  apiVersion = 'client.authentication.k8s.io/v1',
): string {
  return JSON.stringify({
    kind: 'ExecCredential',
    apiVersion,
    spec: { interactive, cluster: { server: 'https://member.example:6443', config } },
  });
}

/** Runs the plugin; `onStderr` sees the accumulated stderr each time more arrives. */
export function runOidcPlugin(
  args: readonly string[],
  execInfo: string,
  onStderr?: (stderr: string) => void,
  env: Record<string, string> = {},
): Promise<OidcRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [OIDC_BIN, ...args], {
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], KUBERNETES_EXEC_INFO: execInfo, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The cache entries (`<key>.json`) in a cache directory, parsed. */
export function cacheEntries(dir: string): {
  file: string;
  entry: { status: { token: string; expirationTimestamp: string }; state?: { refreshToken?: string } };
}[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith('.json'))
    .map((n) => ({ file: join(dir, n), entry: JSON.parse(readFileSync(join(dir, n), 'utf8')) }));
}

/** Every flag of clusterprofile-oidc at its parsed default, with `over` applied: what the provider's settings receive. */
export function oidcFlags(over: Partial<FlagValues<OidcFlags>> = {}): FlagValues<OidcFlags> {
  return {
    grant: undefined,
    'client-id': undefined,
    'client-secret-file': undefined,
    'client-auth': undefined,
    'private-key-file': undefined,
    'private-key-alg': undefined,
    'private-key-id': undefined,
    'subject-token-file': undefined,
    'subject-token-type': undefined,
    'token-param': [],
    'open-browser': false,
    'redirect-port': undefined,
    'login-timeout': undefined,
    timeout: undefined,
    ...over,
  };
}
