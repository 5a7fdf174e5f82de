/**
 * `clusterprofile-oidc`: OpenID Connect tokens for a member cluster's API server (structured authentication /
 * `--oidc-*`). Controllers: client_credentials (secret or private_key_jwt) or RFC 8693 token exchange of a projected
 * service-account token (no stored secret). People (only when `spec.interactive`): device code or authorization code
 * + PKCE with a loopback redirect; afterwards the refresh token in the 0600 cache entry, rotated under the lock.
 *
 * This module is on the cache-hit path: it imports only settings.ts; the grant code is `import()`ed by `issue`.
 */
import type { CredentialProvider } from '../../plugin/provider.js';
import type { OidcState } from './issue.js';
import { oidcCacheKey, oidcFlags, parseOidcSettings, type OidcFlags, type OidcSettings } from './settings.js';

export const oidcProvider: CredentialProvider<OidcFlags, OidcSettings, OidcState> = {
  name: 'oidc',
  description:
    'OpenID Connect tokens: client credentials, token exchange, device code, authorization code + PKCE, refresh',
  flags: oidcFlags,
  minRemainingSeconds: 60,
  // The lock also covers an interactive login (so parallel kubectl runs show one prompt and then share its token):
  // others wait for as long as a login may take — a device code lives as long as the issuer says (Dex 5 min;
  // oidc-provider, Keycloak, Okta 10 min), the code flow 300 s — plus a margin.
  lockTimeoutMs: 630_000,
  settings: ({ input, flags, env }) => parseOidcSettings(input, flags, env),
  cacheKey: oidcCacheKey,
  async issue(settings, context) {
    const { issueOidcToken } = await import('./issue.js');
    return issueOidcToken(settings, context);
  },
};
