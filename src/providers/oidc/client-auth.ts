/**
 * Client authentication at the token endpoint (RFC 6749 §2.3.1; OpenID Connect Core §9 `private_key_jwt`, RFC 7523).
 * Reads the secret or key file when a grant needs it (never on a cache hit); signs client assertions with jose.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { importPKCS8, SignJWT } from 'jose';
import { CredentialsError } from '../../core/errors.js';
import type { ClientAuthentication } from './protocol.js';
import type { ClientAuthMethod } from './settings.js';

/** What client authentication needs, already read from files. */
export type ClientCredential =
  | { method: 'none'; clientID: string }
  | { method: 'client_secret_basic' | 'client_secret_post'; clientID: string; secret: string }
  | { method: 'private_key_jwt'; clientID: string; privateKeyPem: string; alg: string | undefined; kid: string | undefined };

/** Reads a whole small file, trimmed; a missing, unreadable or empty file is `ERR_OIDC_FILE` naming the flag. */
export async function readCredentialFile(file: string, flag: string, what: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CredentialsError('ERR_OIDC_FILE', `cannot read the ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, {
      path: flag,
      cause: error,
    });
  }
  const value = text.trim();
  if (value === '') throw new CredentialsError('ERR_OIDC_FILE', `the ${what} ${file} is empty`, { path: flag });
  return value;
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
      return { method: o.method, clientID: o.clientID, secret: await readCredentialFile(o.clientSecretFile!, '--client-secret-file', 'client secret file') };
    case 'private_key_jwt':
      return {
        method: 'private_key_jwt',
        clientID: o.clientID,
        privateKeyPem: await readCredentialFile(o.privateKeyFile!, '--private-key-file', 'private key file'),
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
export async function clientAuthentication(credential: ClientCredential, audience: string, now: Date): Promise<ClientAuthentication> {
  switch (credential.method) {
    case 'none':
      return { headers: {}, params: { client_id: credential.clientID } };
    case 'client_secret_basic':
      return { headers: { authorization: basic(credential.clientID, credential.secret) }, params: {} };
    case 'client_secret_post':
      return { headers: {}, params: { client_id: credential.clientID, client_secret: credential.secret } };
    case 'private_key_jwt': {
      const { createPrivateKey } = await import('node:crypto');
      let keyObject;
      try {
        keyObject = createPrivateKey(credential.privateKeyPem);
      } catch (error) {
        throw new CredentialsError('ERR_OIDC_FILE', 'the private key file is not a PEM private key', { path: '--private-key-file', cause: error });
      }
      const alg = credential.alg ?? defaultAlg(keyObject.asymmetricKeyType, keyObject.asymmetricKeyDetails?.namedCurve);
      let key;
      try {
        key = await importPKCS8(keyObject.export({ type: 'pkcs8', format: 'pem' }).toString(), alg);
      } catch (error) {
        throw new CredentialsError('ERR_OIDC_CONFIG', `the private key does not fit algorithm ${alg}`, { path: '--private-key-alg', cause: error });
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
