/**
 * The OIDC plugin's error codes (match on `code`, never on the message). Raised as {@link CredentialsError}.
 *
 * | code | when |
 * | --- | --- |
 * | `ERR_OIDC_CONFIG` | bad `spec.cluster.config` field or flag (exit 2) |
 * | `ERR_OIDC_FILE` | a secret, key or subject-token file cannot be read or is empty |
 * | `ERR_OIDC_ISSUER_UNREACHABLE` | connection, DNS, TLS or timeout talking to the issuer |
 * | `ERR_OIDC_DISCOVERY` | the discovery document is missing, not JSON or lacks an endpoint we need |
 * | `ERR_OIDC_ISSUER_MISMATCH` | discovery `issuer` differs from the configured `issuerURL` |
 * | `ERR_OIDC_GRANT` | the token endpoint refused the grant (`error` / `error_description` in the message) |
 * | `ERR_OIDC_REFRESH_FAILED` | the refresh token is revoked, expired or rotated away, and no login is possible |
 * | `ERR_OIDC_INTERACTIVE_REQUIRED` | a login is needed but `spec.interactive` is false |
 * | `ERR_OIDC_LOGIN_FAILED` | the device code expired or was denied, the redirect carried an error or a wrong state |
 * | `ERR_OIDC_TOKEN_INVALID` | a returned token failed validation (signature, algorithm, iss, aud, exp, nbf, nonce) |
 */
export type OidcErrorCode =
  | 'ERR_OIDC_CONFIG'
  | 'ERR_OIDC_FILE'
  | 'ERR_OIDC_ISSUER_UNREACHABLE'
  | 'ERR_OIDC_DISCOVERY'
  | 'ERR_OIDC_ISSUER_MISMATCH'
  | 'ERR_OIDC_GRANT'
  | 'ERR_OIDC_REFRESH_FAILED'
  | 'ERR_OIDC_INTERACTIVE_REQUIRED'
  | 'ERR_OIDC_LOGIN_FAILED'
  | 'ERR_OIDC_TOKEN_INVALID';
