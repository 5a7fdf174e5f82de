/**
 * Dex (github.com/dexidp/dex), the second REAL OpenID Provider of the e2e layer, on 127.0.0.1 over HTTPS. Built from
 * the Go module proxy by test/e2e/controlplane/build.mjs (test/e2e/dex/main.go starts Dex's server package).
 * In-memory storage: every start is a fresh OP. The issuer has no path: Dex accepts its device callback for a public
 * client without registered redirect URIs only at `/device/callback` (it does not add the issuer's path there), and
 * the public client needs none registered to redirect to any loopback port.
 *
 * What it is configured with (see {@link DexClients}):
 * - a confidential `fleet-manager` client (client_credentials), a public `fleet-exchange` client (token exchange with
 *   no secret: the subject token is the only proof), a confidential `kubectl-device` client for the device flow, a
 *   public native `kubectl` client (code + PKCE with a loopback redirect, device code, refresh tokens);
 * - the peer client `kubernetes` that stands for the API server: it lists the others in `trustedPeers`, so they may
 *   ask for `audience:server:client_id:kubernetes` and get tokens whose `aud` holds `kubernetes` (Dex has no
 *   `audience`/`resource` parameter);
 * - one static password user ({@link DEX_USER});
 * - when `upstream` is given, an OIDC connector `kubernetes` (token exchange only) that trusts that issuer's signed
 *   JWTs as subject tokens: what trusting the Kubernetes service-account issuer looks like.
 *
 * {@link dexLoginAt} and {@link dexApproveDeviceCodeAt} play the person at Dex's pages, from any process.
 *
 * @example
 * const dex = await startDex({ binary: binaries.dex, upstream: { issuer: op.issuer, caPem: op.caPem } });
 * // dex.issuer = 'https://127.0.0.1:PORT'
 * await dex.close();
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Agent, fetch, type Dispatcher } from 'undici';
import { freePort } from './controlplane.js';
import { createTestCertificate } from './oidc-op.js';

/** The peer client whose ID is the audience of tokens meant for the API server. */
export const DEX_AUDIENCE = 'kubernetes';
/** The scope that puts {@link DEX_AUDIENCE} into `aud` (Dex's cross-client scopes). */
export const DEX_AUDIENCE_SCOPE = `audience:server:client_id:${DEX_AUDIENCE}`;
/** The connector that trusts the upstream issuer's tokens for token exchange (`connector_id`). */
export const DEX_EXCHANGE_CONNECTOR = 'kubernetes';
export const DEX_USER = {
  email: 'alice@example.com',
  userID: '08a8684b-db88-4b73-90a9-3cd1661f5466',
  groups: ['developers'],
} as const;

export interface DexClients {
  /** Confidential: client_credentials (basic or post), token exchange. */
  fleetManager: { clientId: string; clientSecret: string };
  /** Public: token exchange without a secret (workload identity federation). */
  fleetExchange: { clientId: string };
  /** Confidential: the device flow (redirect `/device/callback`). */
  kubectlDevice: { clientId: string; clientSecret: string };
  /** Public: authorization code + PKCE (any loopback redirect), device code, refresh. */
  kubectl: { clientId: string };
}

/** Serializable facts about a running Dex (what the e2e global setup provides to test files). */
export interface DexInfo {
  issuer: string;
  caPem: string;
  clients: DexClients;
  /** The static user's password (a fresh random one each start). */
  password: string;
  /** `--log-file`: Dex's stderr. */
  logFile: string;
}

export interface TestDex extends DexInfo {
  close(): Promise<void>;
}

export interface DexOptions {
  /** The dex binary (`ensureControlPlaneBinaries().dex`). */
  binary: string;
  /** An issuer whose JWTs the `workload` connector accepts as subject tokens (token exchange). */
  upstream?: { issuer: string; caPem: string };
  /** Dex's device-code lifetime, a Go duration (default 5m: Dex's own default). */
  deviceRequestsValidFor?: string;
  /** Lifetime of ID and access tokens, a Go duration (default 1h). */
  idTokensValidFor?: string;
  /** Where Dex's log goes (default: a file in its temp directory, removed by close()). */
  logFile?: string;
  readyTimeoutMs?: number;
}

/** Starts Dex and waits until its discovery document answers. Always `close()` it. */
export async function startDex(options: DexOptions): Promise<TestDex> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cpc-dex-'));
  const material = await createTestCertificate();
  await writeFile(path.join(dir, 'tls.crt'), material.cert);
  await writeFile(path.join(dir, 'tls.key'), material.key, { mode: 0o600 });
  const port = await freePort();
  const issuer = `https://127.0.0.1:${port}`;
  const secret = (): string => randomBytes(24).toString('base64url');
  const clients: DexClients = {
    fleetManager: { clientId: 'fleet-manager', clientSecret: secret() },
    fleetExchange: { clientId: 'fleet-exchange' },
    kubectlDevice: { clientId: 'kubectl-device', clientSecret: secret() },
    kubectl: { clientId: 'kubectl' },
  };
  const password = secret();
  const logFile = options.logFile ?? path.join(dir, 'dex.log');

  const connectors: unknown[] = [];
  if (options.upstream !== undefined) {
    await writeFile(path.join(dir, 'upstream-ca.crt'), options.upstream.caPem);
    connectors.push({
      type: 'oidc',
      id: DEX_EXCHANGE_CONNECTOR,
      name: 'Workload identity',
      // Only for token exchange: never offered at the login page.
      grantTypes: ['urn:ietf:params:oauth:grant-type:token-exchange'],
      config: {
        issuer: options.upstream.issuer,
        rootCAs: [path.join(dir, 'upstream-ca.crt')],
        // Used by browser logins through this connector, which grantTypes rules out; Dex requires them all the same.
        clientID: 'dex',
        clientSecret: secret(),
        redirectURI: `${issuer}/callback`,
        // Scopes without `email`: a workload token has no email claim. The user name is its `sub`; groups come along.
        scopes: ['groups'],
        userNameKey: 'sub',
        insecureEnableGroups: true,
      },
    });
  }
  const settings = {
    issuer,
    listen: `127.0.0.1:${port}`,
    tlsCert: path.join(dir, 'tls.crt'),
    tlsKey: path.join(dir, 'tls.key'),
    grantTypes: [
      'authorization_code',
      'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code',
      'urn:ietf:params:oauth:grant-type:token-exchange',
      'client_credentials',
    ],
    skipApprovalScreen: true,
    idTokensValidFor: options.idTokensValidFor ?? '1h',
    deviceRequestsValidFor: options.deviceRequestsValidFor ?? '5m',
    enablePasswordDB: true,
    clients: [
      { id: clients.fleetManager.clientId, secret: clients.fleetManager.clientSecret, name: 'Fleet manager' },
      { id: clients.fleetExchange.clientId, public: true, name: 'Fleet workloads' },
      {
        id: clients.kubectlDevice.clientId,
        secret: clients.kubectlDevice.clientSecret,
        name: 'kubectl (confidential)',
        redirectURIs: ['/device/callback'],
      },
      { id: clients.kubectl.clientId, public: true, name: 'kubectl' },
      {
        id: DEX_AUDIENCE,
        secret: secret(),
        name: 'Kubernetes API server',
        trustedPeers: [
          clients.fleetManager.clientId,
          clients.fleetExchange.clientId,
          clients.kubectlDevice.clientId,
          clients.kubectl.clientId,
        ],
      },
    ],
    passwords: [
      { email: DEX_USER.email, username: 'alice', userID: DEX_USER.userID, password, groups: [...DEX_USER.groups] },
    ],
    connectors,
  };
  const configFile = path.join(dir, 'settings.json');
  await writeFile(configFile, JSON.stringify(settings, null, 2), { mode: 0o600 });

  const { openSync, closeSync } = await import('node:fs');
  const fd = openSync(logFile, 'a');
  const child: ChildProcess = spawn(options.binary, ['-config', configFile], {
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  let exitCode: number | null | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    });
    child.once('error', () => resolve());
  });

  const close = async (): Promise<void> => {
    if (exitCode === undefined && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // gone already
      }
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000).unref());
      if ((await Promise.race([exited.then(() => 'exited' as const), timeout])) === 'timeout') {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // gone in between
        }
        await exited;
      }
    }
    await rm(dir, { recursive: true, force: true });
  };

  const dispatcher = new Agent({ connect: { ca: material.ca } });
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  let lastError = 'not started';
  try {
    for (;;) {
      if (exitCode !== undefined) throw new Error(`dex exited with ${exitCode}:\n${await tail(logFile)}`);
      try {
        const response = await fetch(`${issuer}/.well-known/openid-configuration`, { dispatcher });
        if (response.status === 200) break;
        lastError = `HTTP ${response.status}`;
      } catch (error) {
        lastError = String((error as Error).cause ?? error);
      }
      if (Date.now() > deadline)
        throw new Error(`dex: no discovery document within the deadline (${lastError}):\n${await tail(logFile)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await close();
    throw error;
  } finally {
    await dispatcher.close();
  }
  return { issuer, caPem: material.ca, clients, password, logFile, close };
}

async function tail(file: string): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trimEnd().split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Where a Dex is, from any process. */
export interface DexEndpoint {
  issuer: string;
  caPem: string;
}

interface Page {
  status: number;
  url: string;
  body: string;
  location: string | undefined;
}

/** Just enough of a browser for Dex's pages: manual redirects, a cookie jar, and Dex's forms. */
class DexBrowser {
  readonly #cookies = new Map<string, string>();
  readonly #dispatcher: Dispatcher;
  readonly #origin: string;
  constructor(dispatcher: Dispatcher, origin: string) {
    this.#dispatcher = dispatcher;
    this.#origin = origin;
  }

  async request(url: string, form?: Record<string, string>): Promise<Page> {
    const headers: Record<string, string> = {};
    if (new URL(url).origin === this.#origin && this.#cookies.size > 0)
      headers.cookie = [...this.#cookies].map(([n, v]) => `${n}=${v}`).join('; ');
    let body: string | undefined;
    if (form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const res = await fetch(url, {
      method: form === undefined ? 'GET' : 'POST',
      headers,
      body,
      redirect: 'manual',
      dispatcher: this.#dispatcher,
    });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0]!;
      const eq = pair.indexOf('=');
      this.#cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    const location = res.headers.get('location') ?? undefined;
    return {
      status: res.status,
      url,
      body: await res.text(),
      location: location === undefined ? undefined : new URL(location, url).toString(),
    };
  }

  /**
   * Follows redirects and fills Dex's forms — the device code entry, the connector choice (the password database),
   * the login, the consent — until a page that is none of them: Dex's device success page, or the client's redirect URI.
   */
  async follow(start: string, login: { email: string; password: string }): Promise<Page> {
    let page = await this.request(start);
    for (let step = 0; step < 20; step += 1) {
      if (page.location !== undefined) {
        page = await this.request(page.location);
        continue;
      }
      if (new URL(page.url).origin !== this.#origin) return page;
      const action = /<form[^>]*method="post"[^>]*action="([^"]*)"|<form[^>]*action="([^"]*)"[^>]*method="post"/i.exec(
        page.body,
      );
      const target =
        action === null ? undefined : new URL(decodeEntities(action[1] ?? action[2] ?? ''), page.url).toString();
      if (target !== undefined && /name="user_code"/.test(page.body)) {
        const userCode =
          /name="user_code"[^>]*value="([^"]*)"/.exec(page.body)?.[1] ??
          new URL(page.url).searchParams.get('user_code') ??
          '';
        page = await this.request(target, { user_code: userCode });
        continue;
      }
      if (target !== undefined && /name="password"/.test(page.body)) {
        page = await this.request(target, { login: login.email, password: login.password });
        continue;
      }
      // The consent page (Dex shows it despite skipApprovalScreen when the client asks prompt=consent): approve.
      const req = /name="req" value="([^"]*)"\/?>\s*<input type="hidden" name="approval" value="approve"/.exec(
        page.body,
      )?.[1];
      if (req !== undefined) {
        page = await this.request(page.url, { req: decodeEntities(req), approval: 'approve' });
        continue;
      }
      const local = /href="([^"]*\/auth\/local[^"]*)"/.exec(page.body)?.[1];
      if (local !== undefined) {
        page = await this.request(new URL(decodeEntities(local), page.url).toString());
        continue;
      }
      return page;
    }
    throw new Error(`dex: too many steps from ${start}`);
  }
}

function decodeEntities(text: string): string {
  return text
    .replace(/&amp;/g, '&')
    .replace(/&#43;/g, '+')
    .replace(/&#x2F;/gi, '/')
    .replace(/&#34;/g, '"')
    .replace(/&#39;/g, "'");
}

function visibleText(html: string): string {
  return html
    .replace(/<style[\s\S]*?<\/style>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 300);
}

/**
 * The person at Dex's device page: open `verificationUri` (with `?user_code=` or give `userCode`), sign in with
 * the password database, land on Dex's success page. Throws with the page text when Dex refuses (e.g. the 404
 * "Invalid client_id" a device request without the client in its form body leads to).
 */
export async function dexApproveDeviceCodeAt(
  dex: DexEndpoint,
  verificationUri: string,
  login: { email?: string; password: string; userCode?: string },
): Promise<void> {
  const dispatcher = new Agent({ connect: { ca: dex.caPem } });
  try {
    const url = new URL(verificationUri);
    if (login.userCode !== undefined) url.searchParams.set('user_code', login.userCode);
    const page = await new DexBrowser(dispatcher, url.origin).follow(url.toString(), {
      email: login.email ?? DEX_USER.email,
      password: login.password,
    });
    if (page.status !== 200 || !/Login Successful/i.test(page.body))
      throw new Error(`dex: the device login did not succeed: HTTP ${page.status} ${visibleText(page.body)}`);
  } finally {
    await dispatcher.close();
  }
}

/**
 * The person in the browser: open `authorizationUrl`, sign in with the password database, follow the redirect to
 * the client's redirect URI (the plugin's loopback listener). Returns that last page.
 */
export async function dexLoginAt(
  dex: DexEndpoint,
  authorizationUrl: string,
  login: { email?: string; password: string },
): Promise<{ status: number; body: string; url: string }> {
  const dispatcher = new Agent({ connect: { ca: dex.caPem } });
  try {
    const page = await new DexBrowser(dispatcher, new URL(authorizationUrl).origin).follow(authorizationUrl, {
      email: login.email ?? DEX_USER.email,
      password: login.password,
    });
    return { status: page.status, body: page.body, url: page.url };
  } finally {
    await dispatcher.close();
  }
}
