// The device flow of a confidential client against oidc-provider: the plugin (built, as a child process) sends the
// client in the device request's form body when discovery offers client_secret_post (what Dex needs,
// test/e2e/oidc-dex.test.ts) and uses Basic at the token endpoint. oidc-provider takes either method from a client
// registered for the other, so clients registered for client_secret_basic and for client_secret_post both complete a
// login with no --client-auth. (An OP that binds a client to its registered method answers invalid_client to the form
// body; the plugin then asks once more with Basic: test/unit/oidc-real-ops.test.ts.) Needs `npm run build` first.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestOpenIdProvider, type TestOpenIdProvider } from '../helpers/oidc-op.js';
import { oidcExecInfo, runOidcPlugin } from '../helpers/oidc-plugin.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const secrets = { 'device-basic': 'device-basic-secret-0123456789', 'device-post': 'device-post-secret-0123456789' };
let op: TestOpenIdProvider;
let files: string;

beforeAll(async () => {
  op = await startTestOpenIdProvider({
    extraClients: Object.entries(secrets).map(([id, secret]) => ({
      client_id: id,
      client_secret: secret,
      token_endpoint_auth_method: id === 'device-basic' ? 'client_secret_basic' : 'client_secret_post',
      grant_types: [DEVICE, 'refresh_token'],
      response_types: [],
      redirect_uris: [],
    })),
  });
  files = mkdtempSync(join(tmpdir(), 'cpc-oidc-device-auth-'));
  for (const [id, secret] of Object.entries(secrets)) writeFileSync(join(files, id), `${secret}\n`, { mode: 0o600 });
});
afterAll(async () => {
  await op?.close();
});

describe('clusterprofile-oidc: a confidential client in the device flow, method from discovery', () => {
  it.each(Object.keys(secrets))(
    '%s completes with only --grant device_code and --client-secret-file',
    async (clientID) => {
      let approval: Promise<void> | undefined;
      const run = await runOidcPlugin(
        [
          '--grant',
          'device_code',
          '--client-secret-file',
          join(files, clientID),
          '--cache-dir',
          mkdtempSync(join(tmpdir(), 'cpc-oidc-cache-')),
        ],
        oidcExecInfo({ issuerURL: op.issuer, issuerCA: op.caBase64, clientID }, true),
        (stderr) => {
          const code = /enter the code (\S+)/.exec(stderr)?.[1];
          if (code !== undefined && approval === undefined) approval = op.approveDeviceCode(code, { login: 'alice' });
        },
      );
      await approval;
      expect(run.stderr).not.toContain('ERR_');
      expect(run.code).toBe(0);
      const token = (JSON.parse(run.stdout) as { status: { token: string } }).status.token;
      expect(decodeJwt(token)).toMatchObject({ iss: op.issuer, sub: 'alice', aud: clientID });
      expect(
        op.grants.filter((g) => g.grantType === DEVICE && g.clientId === clientID && g.outcome === 'success'),
      ).toHaveLength(1);
    },
  );
});
