/**
 * The Secrets of the Kubernetes state that are created once and never updated: the CAs (the embedded signer's, the
 * replicas' HTTPS one) and the key that seals nonces. Whichever replica comes first creates each; the others read
 * the winner's.
 */
import { createPrivateKey, randomBytes } from 'node:crypto';
import { CredentialsError } from '../../../base/errors.js';
import { createCertificateAuthority, loadCertificateAuthority, type CertificateAuthority } from '../../certificates.js';
import { CA_LIFETIME_MS, caCommonName } from '../issuer-cas.js';
import type { StateConnection } from './connection.js';
import { LABEL_KIND, stateFailure, type KubeObject, type Paths } from './objects.js';
import { NONCE_KEY_BYTES, NonceSeal } from './sealed-nonces.js';

export const ANNOTATION_PROVIDER = 'credentials.clusterprofile.io/provider-cluster-id';
export const CLIENT_CA_SECRET = 'clusterprofile-issuer-client-ca';
export const SERVING_CA_SECRET = 'clusterprofile-issuer-serving-ca';
/** The HMAC key that seals nonces, shared by the replicas. */
export const NONCE_KEY_SECRET = 'clusterprofile-issuer-nonce-key';

function corrupt(what: string, path: string, cause?: unknown, hint?: string): CredentialsError {
  return new CredentialsError('ERR_ISSUER_STATE_CORRUPT', what, {
    path,
    hint:
      hint ??
      'the object was not written by the issuer: restore it, or delete it (a CA Secret deleted makes a new CA nothing trusts yet)',
    ...(cause === undefined ? {} : { cause }),
  });
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined): string | undefined =>
  text === undefined ? undefined : Buffer.from(text, 'base64').toString('utf8');

/**
 * A CA in a Secret: read it, or create it when there is none. Two replicas starting together both try to create;
 * the API server accepts one, the other reads the winner's. Never updated: a Secret of another provider is refused.
 */
export async function ensureCaSecret(
  conn: StateConnection,
  paths: Paths,
  name: string,
  what: 'serving' | 'client',
  providerClusterID: string,
  now: Date,
): Promise<CertificateAuthority> {
  const path = `secret ${paths.namespace}/${name}`;
  return ensureSecret(conn, paths, name, providerClusterID, {
    read(secret) {
      const certificatePem = unb64(secret.data?.['tls.crt']);
      const keyPem = unb64(secret.data?.['tls.key']);
      if (certificatePem === undefined || keyPem === undefined)
        throw corrupt(`the ${path} lacks tls.crt or tls.key`, path);
      try {
        return loadCertificateAuthority(certificatePem, createPrivateKey(keyPem));
      } catch (cause) {
        throw corrupt(`the ${path} holds no usable CA: ${(cause as Error).message}`, path, cause);
      }
    },
    make() {
      const created = createCertificateAuthority(caCommonName(what, providerClusterID), now, CA_LIFETIME_MS);
      return {
        type: 'kubernetes.io/tls',
        kind: 'ca',
        data: { 'tls.crt': b64(created.certificatePem), 'tls.key': b64(created.keyPem) },
        value: () => loadCertificateAuthority(created.certificatePem, createPrivateKey(created.keyPem)),
      };
    },
  });
}

/**
 * The key that seals nonces, in the Secret {@link NONCE_KEY_SECRET} (data `key`: 32 random bytes): read it, or create
 * it when there is none — as {@link ensureCaSecret}, the API server accepts one replica's create and the others read
 * the winner's. Never updated or logged. Deleting the Secret rotates it (see docs/explanation/issuer-state.md).
 */
export async function ensureNonceKey(
  conn: StateConnection,
  paths: Paths,
  providerClusterID: string,
): Promise<NonceSeal> {
  const path = `secret ${paths.namespace}/${NONCE_KEY_SECRET}`;
  return ensureSecret(conn, paths, NONCE_KEY_SECRET, providerClusterID, {
    read(secret) {
      const key = Buffer.from(secret.data?.['key'] ?? '', 'base64');
      if (key.length !== NONCE_KEY_BYTES) {
        throw corrupt(
          `the ${path} holds no ${NONCE_KEY_BYTES}-byte key`,
          path,
          undefined,
          'delete it and restart every replica: the first makes a new key (nonces outstanding are then refused; consumers fetch new ones)',
        );
      }
      return new NonceSeal(key);
    },
    make() {
      const key = randomBytes(NONCE_KEY_BYTES);
      return { type: 'Opaque', kind: 'key', data: { key: key.toString('base64') }, value: () => new NonceSeal(key) };
    },
  });
}

/**
 * A Secret of the state that is created once and never updated: read it (it must name this provider), or create it
 * when there is none; when another replica's create came first (409), read the winner's.
 */
async function ensureSecret<T>(
  conn: StateConnection,
  paths: Paths,
  name: string,
  providerClusterID: string,
  how: {
    read(secret: KubeObject): T;
    make(): { type: string; kind: string; data: Record<string, string>; value(): T };
  },
): Promise<T> {
  const path = `secret ${paths.namespace}/${name}`;
  const read = (secret: KubeObject): T => {
    const owner = secret.metadata?.annotations?.[ANNOTATION_PROVIDER];
    if (owner !== providerClusterID) {
      throw new CredentialsError(
        'ERR_ISSUER_CONFIG',
        `the ${path} belongs to provider ${owner ?? '(none)'}, not ${providerClusterID}`,
        {
          path: '--namespace',
          hint: 'one namespace holds the state of one provider cluster: use another --namespace',
        },
      );
    }
    return how.read(secret);
  };
  const got = await conn.send({ method: 'GET', path: paths.secret(name) }, `reading the ${path}`);
  if (got.status === 200) return read(got.body as KubeObject);
  if (got.status !== 404) throw stateFailure(`reading the ${path}`, got, path);
  const made = how.make();
  const created = await conn.send(
    {
      method: 'POST',
      path: paths.secrets(),
      body: {
        apiVersion: 'v1',
        kind: 'Secret',
        type: made.type,
        metadata: {
          name,
          labels: { [LABEL_KIND]: made.kind },
          annotations: { [ANNOTATION_PROVIDER]: providerClusterID },
        },
        data: made.data,
      },
    },
    `creating the ${path}`,
  );
  if (created.status === 201) return made.value();
  if (created.status !== 409) throw stateFailure(`creating the ${path}`, created, path);
  // Another replica created it first: use that one.
  const winner = await conn.send({ method: 'GET', path: paths.secret(name) }, `reading the ${path}`);
  if (winner.status !== 200) throw stateFailure(`reading the ${path}`, winner, path);
  return read(winner.body as KubeObject);
}
