/**
 * The door of the token-request provider: the only module of this folder that code outside it imports. The
 * credential provider (for `runPlugin` / `obtainCredential`) and the TokenRequest wire format `clusterprofile token
 * sync` shares with it (settings from a `spec.cluster.config`, the request, the response).
 */

// the credential provider
export { tokenRequestFlags, tokenRequestProvider } from './provider.js';
export type { Bootstrap, TokenRequestProviderSettings } from './provider.js';

// the TokenRequest settings and wire format
export {
  DEFAULT_EXPIRATION_SECONDS,
  MAX_EXPIRATION_SECONDS,
  MIN_EXPIRATION_SECONDS,
  parseTokenRequestSettings,
} from './settings.js';
export type { TokenRequestSettings, TokenRequestSettingsSources } from './settings.js';
export { RENEW_AFTER_FRACTION, buildTokenRequest, processTokenRequestResponse } from './protocol.js';
export type { MintedToken } from './protocol.js';
