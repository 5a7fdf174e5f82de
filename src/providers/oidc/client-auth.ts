/**
 * Client authentication at the token endpoint (RFC 6749 §2.3.1; OpenID Connect Core §9 `private_key_jwt`, RFC 7523):
 * which method (from the issuer's discovery document unless `--client-auth` says), and what it sends. Reads the secret
 * or key file when a grant needs it (never on a cache hit); signs client assertions with jose, loaded only then.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs';
import { CredentialsError } from '../../base/errors.js';
import { decodePrivateKeyPem } from '../../base/pem-file.js';
import type { ClientAuthentication, ProviderMetadata } from './protocol.js';
import type { ClientAuthMethod } from './settings.js';

/** The methods the plugin uses at each endpoint it authenticates to. */
export interface ClientAuthChoice {
  token: ClientAuthMethod;
  /** The device authorization endpoint (RFC 8628 §3.1). */
  device: ClientAuthMethod;
  /** When `device` differs from `token`: the method to try the device request with once more if it is refused. */
  deviceFallback?: ClientAuthMethod;
}

/** Secret methods in the order the plugin prefers them: basic is the one every OP must support (RFC 6749 §2.3.1). */
const SECRET_METHODS = ['client_secret_basic', 'client_secret_post'] as const;

function unsupported(
  method: ClientAuthMethod,
  listed: string[] | undefined,
  given: boolean,
  discovery: string,
): CredentialsError {
  const offers =
    listed === undefined
      ? 'its discovery document has no token_endpoint_auth_methods_supported, which means client_secret_basic only (OpenID Connect Discovery 1.0 §3)'
      : `it offers ${listed.length === 0 ? 'none' : listed.join(', ')} (token_endpoint_auth_methods_supported)`;
  const from = given
    ? '--client-auth'
    : method === 'private_key_jwt'
      ? 'implied by --private-key-file'
      : 'implied by --client-secret-file';
  const hint = given
    ? 'choose a method the issuer offers with --client-auth, or register the client for this one at the issuer'
    : listed === undefined
      ? `if the issuer accepts ${method} all the same, say so with --client-auth ${method}`
      : method === 'private_key_jwt'
        ? `the issuer takes a client secret (e.g. Dex, which has no private_key_jwt): pass --client-secret-file instead of --private-key-file`
        : 'register a key for the client at the issuer and pass --private-key-file instead of --client-secret-file';
  return new CredentialsError(
    'ERR_OIDC_CLIENT_AUTH_UNSUPPORTED',
    `the issuer does not offer client authentication ${method} (${from}): ${offers}`,
    {
      path: discovery,
      hint,
    },
  );
}

/**
 * The client authentication method per endpoint. `--client-auth` is the operator's word: used as given, but refused
 * when the issuer lists its methods and that one is not among them. Otherwise discovery decides: for a secret
 * `client_secret_basic` if offered, else `client_secret_post`; for a key `private_key_jwt`; a missing list means
 * `client_secret_basic` only. `none` (a public client) is never checked: OPs rarely list it (Dex does not).
 *
 * The device authorization endpoint: RFC 8628 §3.1 shows the client in the form body, and some OPs read it only from
 * there — Dex's `/device/code` ignores an Authorization header, so the person at the verification page then sees
 * "Invalid client_id". So, unless `--client-auth` was given, a secret goes in the form body when the issuer offers
 * `client_secret_post` (oidc-provider takes either); an OP that binds a client to another registered method refuses
 * that with `invalid_client`, and the request is sent once more with the token endpoint's method (`deviceFallback`).
 */
export function chooseClientAuth(
  o: { method: ClientAuthMethod; given: boolean },
  metadata: ProviderMetadata,
  discovery: string,
): ClientAuthChoice {
  if (o.method === 'none') return { token: 'none', device: 'none' };
  const listed = metadata.token_endpoint_auth_methods_supported;
  const offered: readonly string[] = listed ?? ['client_secret_basic'];
  if (o.given) {
    if (listed !== undefined && !listed.includes(o.method)) throw unsupported(o.method, listed, true, discovery);
    return { token: o.method, device: o.method };
  }
  if (o.method === 'private_key_jwt') {
    if (!offered.includes('private_key_jwt')) throw unsupported(o.method, listed, false, discovery);
    return { token: 'private_key_jwt', device: 'private_key_jwt' };
  }
  const token = SECRET_METHODS.find((m) => offered.includes(m));
  if (token === undefined) throw unsupported(o.method, listed, false, discovery);
  if (token !== 'client_secret_post' && offered.includes('client_secret_post'))
    return { token, device: 'client_secret_post', deviceFallback: token };
  return { token, device: token };
}

/** What client authentication needs, already read from files. */
export type ClientCredential =
  | { method: 'none'; clientID: string }
  | { method: 'client_secret_basic' | 'client_secret_post'; clientID: string; secret: string }
  | {
      method: 'private_key_jwt';
      clientID: string;
      privateKeyPem: string;
      /** Where {@link privateKeyPem} was read from, for messages. */
      privateKeyFile: string;
      alg: string | undefined;
      kid: string | undefined;
    };

/** Reads a whole small file, trimmed; a missing, unreadable or empty file is `ERR_OIDC_FILE` naming the flag. */
export async function readCredentialFile(file: string, flag: string, what: string): Promise<string> {
  let text: string;
  try {
    // The callback API: node:fs/promises (with readline) is not worth loading for one small file on a miss.
    text = await new Promise<string>((resolve, reject) =>
      readFile(file, 'utf8', (error, read) => (error ? reject(error) : resolve(read))),
    );
  } catch (error) {
    throw new CredentialsError(
      'ERR_OIDC_FILE',
      `cannot read the ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
      {
        path: flag,
        cause: error,
      },
    );
  }
  const value = text.trim();
  if (value === '') throw new CredentialsError('ERR_OIDC_FILE', `the ${what} ${file} is empty`, { path: flag });
  return value;
}

/** The same credential presented with another method of the same kind (basic ↔ post). */
export function withMethod(credential: ClientCredential, method: ClientAuthMethod): ClientCredential {
  if (credential.method === method) return credential;
  if (
    (credential.method === 'client_secret_basic' || credential.method === 'client_secret_post') &&
    (method === 'client_secret_basic' || method === 'client_secret_post')
  ) {
    return { ...credential, method };
  }
  throw new TypeError(`cannot present a ${credential.method} credential as ${method}`);
}

export async function loadClientCredential(o: {
  method: ClientAuthMethod;
  clientID: string;
  clientSecretFile: string | undefined;
  privateKeyFile: string | undefined;
  privateKeyAlg: string | undefined;
  privateKeyId: string | undefined;
}): Promise<ClientCredential> {
  switch (o.method) {
    case 'none':
      return { method: 'none', clientID: o.clientID };
    case 'client_secret_basic':
    case 'client_secret_post':
      return {
        method: o.method,
        clientID: o.clientID,
        secret: await readCredentialFile(o.clientSecretFile!, '--client-secret-file', 'client secret file'),
      };
    case 'private_key_jwt':
      return {
        method: 'private_key_jwt',
        clientID: o.clientID,
        privateKeyPem: await readCredentialFile(o.privateKeyFile!, '--private-key-file', 'private key file'),
        privateKeyFile: o.privateKeyFile!,
        alg: o.privateKeyAlg,
        kid: o.privateKeyId,
      };
  }
}

/** RFC 6749 §2.3.1: client_id and secret are form-urlencoded before Basic encoding. */
function basic(clientID: string, secret: string): string {
  const enc = (s: string): string => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(clientID)}:${enc(secret)}`).toString('base64')}`;
}

/** The JWS algorithm a key type implies: RS256, ES256/ES384/ES512 by curve, EdDSA. */
function defaultAlg(keyType: string | undefined, namedCurve: string | undefined): string {
  if (keyType === 'ec') return namedCurve === 'secp384r1' ? 'ES384' : namedCurve === 'secp521r1' ? 'ES512' : 'ES256';
  if (keyType === 'ed25519') return 'EdDSA';
  return 'RS256';
}

/**
 * The headers and parameters that authenticate the client. For private_key_jwt: a fresh assertion (iss = sub =
 * client ID, aud = the token endpoint, jti, 60 s lifetime) signed with the key.
 */
export async function clientAuthentication(
  credential: ClientCredential,
  audience: string,
  now: Date,
): Promise<ClientAuthentication> {
  switch (credential.method) {
    case 'none':
      return { headers: {}, params: { client_id: credential.clientID } };
    case 'client_secret_basic':
      return { headers: { authorization: basic(credential.clientID, credential.secret) }, params: {} };
    case 'client_secret_post':
      return { headers: {}, params: { client_id: credential.clientID, client_secret: credential.secret } };
    case 'private_key_jwt': {
      const { importPKCS8, SignJWT } = await import('jose');
      const keyObject = decodePrivateKeyPem(credential.privateKeyPem, {
        file: credential.privateKeyFile,
        flag: '--private-key-file',
        code: 'ERR_OIDC_FILE',
      });
      const alg = credential.alg ?? defaultAlg(keyObject.asymmetricKeyType, keyObject.asymmetricKeyDetails?.namedCurve);
      let key: Awaited<ReturnType<typeof importPKCS8>>;
      try {
        key = await importPKCS8(keyObject.export({ type: 'pkcs8', format: 'pem' }).toString(), alg);
      } catch (error) {
        throw new CredentialsError('ERR_OIDC_CONFIG', `the private key does not fit algorithm ${alg}`, {
          path: '--private-key-alg',
          cause: error,
        });
      }
      const iat = Math.floor(now.getTime() / 1000);
      const assertion = await new SignJWT({})
        .setProtectedHeader({ alg, typ: 'JWT', ...(credential.kid === undefined ? {} : { kid: credential.kid }) })
        .setIssuer(credential.clientID)
        .setSubject(credential.clientID)
        .setAudience(audience)
        .setJti(randomBytes(16).toString('base64url'))
        .setIssuedAt(iat)
        .setExpirationTime(iat + 60)
        .sign(key);
      return {
        headers: {},
        params: {
          client_id: credential.clientID,
          client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
          client_assertion: assertion,
        },
      };
    }
  }
}
