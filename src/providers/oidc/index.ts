/**
 * The door of the oidc provider: the only module of this folder that code outside it imports. The credential
 * provider (for `runPlugin` / `obtainCredential`), its flags and the types of its settings and cached state.
 */
export { oidcProvider } from './provider.js';
export { oidcFlags, GRANTS } from './settings.js';
export type { Grant, OidcFlags, OidcSettings } from './settings.js';
export type { OidcState } from './issue.js';
