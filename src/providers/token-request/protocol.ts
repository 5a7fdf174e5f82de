/**
 * The TokenRequest exchange as three separate steps (conventions: build, send, process): {@link buildTokenRequest} makes the HTTP request,
 * a transport sends it, {@link processTokenRequestResponse} turns the answer into a credential or an error that names
 * what is missing. Nothing here does I/O, so every rule is testable with hand-made responses.
 *
 * `POST /api/v1/namespaces/{namespace}/serviceaccounts/{name}/token` (authentication.k8s.io/v1 TokenRequest).
 */
import { CredentialsError } from '../../base/errors.js';
import { statusMessage } from '../../kube/status.js';
import type { KubeRequest, KubeResponse } from '../../kube/types.js';
import { parseTimestamp } from '../../base/exec-credential.js';
import type { TokenRequestSettings } from './settings.js';

export interface MintedToken {
  token: string;
  /** When the token itself stops being accepted. */
  expiresAt: Date;
  /** When a client should stop using it and mint a new one: 80% into its lifetime, like the kubelet. */
  renewAt: Date;
}

/** Fraction of a token's lifetime after which it is renewed (the kubelet's rule for projected tokens). */
export const RENEW_AFTER_FRACTION = 0.8;

export function tokenRequestPath(namespace: string, serviceAccount: string): string {
  return `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(serviceAccount)}/token`;
}

export function buildTokenRequest(settings: TokenRequestSettings): KubeRequest {
  return {
    method: 'POST',
    path: tokenRequestPath(settings.namespace, settings.serviceAccount),
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: settings.audiences,
        expirationSeconds: settings.expirationSeconds,
        ...(settings.boundObjectRef === undefined ? {} : { boundObjectRef: settings.boundObjectRef }),
      },
    },
  };
}

function describeFailure(response: KubeResponse, settings: TokenRequestSettings, server: string): CredentialsError {
  const account = `${settings.namespace}/${settings.serviceAccount}`;
  const detail = statusMessage(response.body) ?? '';
  const said = detail === '' ? '' : `: ${detail}`;
  const path = `${server}${tokenRequestPath(settings.namespace, settings.serviceAccount)}`;
  switch (response.status) {
    case 401:
      return new CredentialsError(
        'ERR_TOKEN_REQUEST_UNAUTHORIZED',
        `the API server rejected the bootstrap credential (401 Unauthorized)${said}`,
        {
          path,
          hint: 'check that the bootstrap credential (tenant-cert identity, --bootstrap-kubeconfig or in-cluster token) is valid for this cluster',
        },
      );
    case 403:
      return new CredentialsError(
        'ERR_TOKEN_REQUEST_FORBIDDEN',
        `the bootstrap identity may not create tokens for service account ${account} (403 Forbidden)${said}`,
        {
          path,
          hint: `grant verb "create" on resource "serviceaccounts/token" with resourceNames ["${settings.serviceAccount}"] in namespace "${settings.namespace}" (see deploy/token-request-rbac.yaml)`,
        },
      );
    case 404:
      return new CredentialsError(
        'ERR_TOKEN_REQUEST_NOT_FOUND',
        `service account ${account} not found (404 Not Found)${said}`,
        {
          path,
          hint: `create the service account "${settings.serviceAccount}" in namespace "${settings.namespace}" on the member cluster`,
        },
      );
    default:
      return new CredentialsError(
        'ERR_TOKEN_REQUEST_REJECTED',
        `TokenRequest for service account ${account} failed with HTTP ${response.status}${said}`,
        { path },
      );
  }
}

function malformed(message: string, server: string): CredentialsError {
  return new CredentialsError('ERR_TOKEN_REQUEST_RESPONSE_INVALID', `malformed TokenRequest response: ${message}`, {
    path: server,
  });
}

/**
 * Checks the API server's answer: a 201 (or 200) TokenRequest whose `status.token` is a non-empty string and whose
 * `status.expirationTimestamp` is an RFC 3339 time in the future. `now` is when the request was sent.
 */
export function processTokenRequestResponse(
  response: KubeResponse,
  settings: TokenRequestSettings,
  context: { server: string; now: Date },
): MintedToken {
  if (response.status !== 201 && response.status !== 200) {
    throw describeFailure(response, settings, context.server);
  }
  const body = response.body;
  if (typeof body !== 'object' || body === null) {
    throw malformed('the body is not a JSON object', context.server);
  }
  const { kind, status } = body as { kind?: unknown; status?: unknown };
  if (kind !== 'TokenRequest') {
    throw malformed(`kind is ${JSON.stringify(kind)}, expected "TokenRequest"`, context.server);
  }
  if (typeof status !== 'object' || status === null) {
    throw malformed('no status', context.server);
  }
  const { token, expirationTimestamp } = status as { token?: unknown; expirationTimestamp?: unknown };
  if (typeof token !== 'string' || token === '' || /\s/.test(token)) {
    throw malformed('status.token is missing or not a token', context.server);
  }
  const expiresMs = typeof expirationTimestamp === 'string' ? parseTimestamp(expirationTimestamp) : undefined;
  const expiresAt = expiresMs === undefined ? undefined : new Date(expiresMs);
  if (expiresAt === undefined) {
    throw malformed(
      `status.expirationTimestamp ${JSON.stringify(expirationTimestamp)} is not an RFC 3339 time`,
      context.server,
    );
  }
  const lifetime = expiresAt.getTime() - context.now.getTime();
  if (lifetime <= 0) {
    throw malformed(
      `the token expired at ${expirationTimestamp}, before it was received (check the clocks)`,
      context.server,
    );
  }
  return { token, expiresAt, renewAt: new Date(context.now.getTime() + Math.floor(lifetime * RENEW_AFTER_FRACTION)) };
}
