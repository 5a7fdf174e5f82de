/**
 * A cache miss of the tenant-cert plugin, under the runtime's lock:
 *
 * 1. an Identity imported for (our cluster, the provider) whose certificate is ours and before its renewal point is
 *    served as is;
 * 2. otherwise the issuer handshake: nonce request signed with the cluster key → nonce → CSR + context-bound signature made here (the private key never leaves
 *    the process) → Tenant → Identity;
 * 3. the returned certificate is checked (CN = our cluster ID, our public key, signed by the chain the issuer sent,
 *    not expired, clock skew) and served with `expirationTimestamp` at 2/3 of its own lifetime.
 */
import { X509Certificate } from 'node:crypto';
import { CredentialsError, isCredentialsError } from '../../base/errors.js';
import { formatTimestamp } from '../../base/exec-credential.js';
import type { IssueContext, IssuedCredential } from '../../plugin/provider.js';
import { issuerHandshake } from './consumer/handshake.js';
import { buildTenant } from '../../wire/tenant-cert/documents.js';
import { parsePrivateKeyPem } from '../../wire/tenant-cert/keys.js';
import { signNonceRequest } from '../../wire/tenant-cert/message.js';
import { checkCertificate, type CheckedCertificate } from './consumer/certificate.js';
import { identityFile, parseCertificateBundle } from './settings.js';
import { existsSync } from 'node:fs';
import type { TenantCertPluginSettings, TenantCertState } from './settings.js';
import type { HttpClient } from '../../base/http.js';

/** The runtime's margin: a credential must stay usable at least this long. */
const MIN_REMAINING_MS = 60_000;

export interface IssueOptions {
  /** Tests: an HTTP client (still verifying TLS); default: one trusting only issuerCA. */
  client?: HttpClient;
  initialBackoffMs?: number;
}

function output(
  checked: CheckedCertificate,
  keyPem: string,
  source: TenantCertState['source'],
): IssuedCredential<TenantCertState> {
  return {
    status: {
      clientCertificateData: checked.pem,
      clientKeyData: keyPem.endsWith('\n') ? keyPem : `${keyPem}\n`,
      expirationTimestamp: formatTimestamp(checked.renewAt.getTime(), { seconds: true }),
    },
    state: {
      source,
      serialNumber: checked.certificate.serialNumber,
      notAfter: formatTimestamp(checked.notAfter.getTime()),
    },
  };
}

/** The certificates after the leaf in a PEM bundle (the chain an issuer may send along). */
function chainOf(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return blocks.slice(1).map((block) => new X509Certificate(block));
}

export async function issueTenantCertificate(
  settings: TenantCertPluginSettings,
  context: IssueContext<TenantCertState>,
  options: IssueOptions = {},
): Promise<IssuedCredential<TenantCertState>> {
  const privateKey = parsePrivateKeyPem(settings.keyPem, settings.keyFile, {
    flag: '--key-file',
    code: 'ERR_TENANT_CERT_KEY_FILE',
  });
  const log = (line: string): void => {
    context.stderr.write(`${line}\n`);
  };

  // The YAML reader and schema code are loaded only when an Identity was imported for this pair.
  const importedFile = identityFile(settings.identityDir, settings.clusterID, settings.providerClusterID);
  if (existsSync(importedFile)) {
    try {
      const { loadImportedIdentity } = await import('./consumer/identity.js');
      const imported = await loadImportedIdentity(settings.identityDir, settings.clusterID, settings.providerClusterID);
      if (imported !== undefined) {
        const checked = checkCertificate(imported.identity.certificatePem, {
          clusterID: settings.clusterID,
          privateKey,
          now: context.now(),
          minRemainingMs: MIN_REMAINING_MS,
          source: `the imported Identity ${imported.file}`,
          // With an issuer, renew at the 2/3 point; without one, serve it until shortly before it expires.
          allowPastRenewal: settings.issuerURL === undefined,
        });
        const twoThirds =
          checked.notBefore.getTime() + ((checked.notAfter.getTime() - checked.notBefore.getTime()) * 2) / 3;
        if (checked.renewAt.getTime() > twoThirds + 1000) {
          log(
            `clusterprofile-tenant-cert: the imported Identity ${imported.file} is past 2/3 of its lifetime and expires at ${formatTimestamp(checked.notAfter.getTime())}: import a renewed one`,
          );
        }
        return output(checked, settings.keyPem, 'imported');
      }
    } catch (error) {
      // Unusable (expired, for another key, malformed, unsafe permissions): the issuer, when there is one, decides.
      if (settings.issuerURL === undefined) {
        throw error;
      }
      const reason = isCredentialsError(error) ? `${error.code}: ${error.message}` : String(error);
      log(`clusterprofile-tenant-cert: not using the imported Identity (${reason}); asking the issuer`);
    }
  }

  if (settings.issuerURL === undefined || settings.issuerCA === undefined) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_NO_ISSUER',
      `no Identity of ${settings.providerClusterID} for ${settings.clusterID} was imported and spec.cluster.config has no issuerURL/issuerCA`,
      {
        path: 'spec.cluster.config.issuerURL',
        hint: "set issuerURL and issuerCA in the cluster's exec extension, or run: clusterprofile identity import FILE",
      },
    );
  }

  try {
    await parseCertificateBundle(settings.issuerCA);
  } catch (cause) {
    throw new CredentialsError(
      'ERR_TENANT_CERT_CONFIG',
      `spec.cluster.config.issuerCA: a certificate in the bundle cannot be parsed: ${(cause as Error).message}`,
      { path: 'spec.cluster.config.issuerCA', cause },
    );
  }

  const result = await issuerHandshake(
    {
      issuerURL: settings.issuerURL,
      issuerCA: settings.issuerCA,
      timeoutMs: settings.timeoutMs,
      now: context.now,
      signal: context.signal,
      log,
      ...(options.client === undefined ? {} : { client: options.client }),
      ...(options.initialBackoffMs === undefined ? {} : { initialBackoffMs: options.initialBackoffMs }),
    },
    { consumerClusterID: settings.clusterID, providerClusterID: settings.providerClusterID },
    {
      // Proof of possession: only the holder of the registered key can make the issuer hand out (and retire) nonces.
      nonceRequest: (at) =>
        signNonceRequest(
          privateKey,
          { consumerClusterID: settings.clusterID, providerClusterID: settings.providerClusterID },
          at,
        ),
      tenant: async (nonce) => {
        if (nonce.subject.commonName !== settings.clusterID) {
          throw new CredentialsError(
            'ERR_TENANT_CERT_SUBJECT',
            `the issuer would certify CN ${JSON.stringify(nonce.subject.commonName)}, not our cluster ID ${JSON.stringify(settings.clusterID)}`,
            { path: settings.issuerURL },
          );
        }
        return buildTenant({
          privateKey,
          consumerClusterID: settings.clusterID,
          providerClusterID: settings.providerClusterID,
          nonce: nonce.nonce,
          organizations: nonce.subject.organizations,
        });
      },
    },
  );

  const pem = Buffer.from(result.identity.spec.authParams.signedCRT, 'base64').toString('utf8');
  let chain: X509Certificate[] = [];
  try {
    chain = chainOf(pem);
  } catch {
    chain = [];
  }
  // The configured client CA wins; else the chain the issuer sent along, if any.
  const clientCA = settings.clientCA === undefined ? chain : await parseCertificateBundle(settings.clientCA);
  const checked = checkCertificate(pem, {
    clusterID: settings.clusterID,
    privateKey,
    ...(clientCA.length === 0 ? {} : { clientCA }),
    now: context.now(),
    clockOffsetMs: result.clockOffsetMs,
    minRemainingMs: MIN_REMAINING_MS,
    source: `the issuer ${settings.issuerURL}`,
  });
  return output(checked, settings.keyPem, 'issuer');
}
