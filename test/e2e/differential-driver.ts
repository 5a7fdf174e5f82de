/**
 * The Go side of the differential test: test/e2e/differential (cluster-inventory-api v0.1.0 + client-go v0.35),
 * fed JSON lines. See test/e2e/differential/main.go for the protocol.
 */
import { spawn } from 'node:child_process';

export type DriverRequest =
  | { id: string; kind: 'resolve'; providersFile: string; profiles: string[]; shared: boolean }
  | { id: string; kind: 'output'; apiVersion: string; stdout: string };

export interface GoConfigView {
  host: string;
  caData: string;
  serverName: string;
  insecure: boolean;
  disableCompression: boolean;
  proxy: string;
  proxyError?: string;
  exec: {
    command: string;
    args: string[];
    env: { name: string; value: string }[];
    apiVersion: string;
    installHint: string;
    provideClusterInfo: boolean;
    interactiveMode: string;
    config: unknown;
  };
  execInfo?: unknown;
  execInfoError?: string;
  clientError?: string;
}

export interface GoResolveResult {
  stage: 'providers' | 'profile' | 'build' | 'panic' | 'ok';
  error?: string;
  config?: GoConfigView;
}

export interface GoCredentialView {
  error?: string;
  token: string;
  hasCert: boolean;
  expiresAt: number | null;
}

export interface DriverResponse {
  id: string;
  resolve?: GoResolveResult[];
  output?: { decode: GoCredentialView; authenticator: GoCredentialView };
  driverError?: string;
}

/** Runs the driver once over all requests; responses come back in request order. */
export async function runDriver(binary: string, requests: readonly DriverRequest[]): Promise<DriverResponse[]> {
  const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exit = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  // A driver that dies early closes its stdin: the exit code below reports it.
  child.stdin.on('error', () => undefined);
  child.stdin.end(`${requests.map((request) => JSON.stringify(request)).join('\n')}\n`);
  const code = await exit;
  if (code !== 0) throw new Error(`differential driver exited with ${code}: ${stderr}`);
  const responses = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as DriverResponse);
  if (responses.length !== requests.length) {
    throw new Error(`differential driver answered ${responses.length} of ${requests.length} requests: ${stderr}`);
  }
  responses.forEach((response, index) => {
    if (response.driverError !== undefined || response.id !== requests[index]?.id) {
      throw new Error(
        `differential driver: request ${requests[index]?.id}: ${response.driverError ?? `answered ${response.id}`}`,
      );
    }
  });
  return responses;
}

/**
 * JSON text as the API server writes it (Go's encoding/json): like JSON.stringify, but <, >, &, U+2028 and U+2029
 * escaped. A controller's ClusterProfile reaches cluster-inventory-api in this form, and upstream's YAML decoder of
 * the reserved extensions reads this text (its 1024-character limit on a key counts escapes).
 */
export function goJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
