// Interop with an independent implementation: keys, CSRs and signatures made by the openssl CLI are accepted by the
// issuer process; what the issuer and our core produce is verified by openssl.
import { execFileSync } from 'node:child_process';
import { createHash, createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signTenant } from '../../src/wire/tenant-cert/message.js';
import { cli, issuerClient, serveIssuer, type IssuerProcess } from '../helpers/issuer-process.js';

const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-openssl-'));
const dataDir = join(work, 'data');
let issuer: IssuerProcess;

function openssl(...args: string[]): string {
  return execFileSync('openssl', args, { cwd: work, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The documented context-v1 message, written out here by hand (not with message.ts). */
function contextMessage(provider: string, consumer: string, nonce: string, csrPem: string): Buffer {
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  const der = Buffer.from(csrPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  return Buffer.concat([
    field(Buffer.from('clusterprofile-credentials/tenant-cert/v1 tenant signature')),
    field(Buffer.from(provider)),
    field(Buffer.from(consumer)),
    field(Buffer.from(nonce)),
    field(createHash('sha256').update(der).digest()),
  ]);
}

/** The documented nonce request message, written out by hand too. */
function nonceRequestMessage(provider: string, consumer: string, timestamp: string): Buffer {
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    return Buffer.concat([length, bytes]);
  };
  return Buffer.concat([
    field(Buffer.from('clusterprofile-credentials/tenant-cert/v1 nonce request')),
    field(Buffer.from(provider)),
    field(Buffer.from(consumer)),
    field(Buffer.from(timestamp)),
  ]);
}

/** A nonce request signed by the openssl CLI with NAME.key (Ed25519 raw, else ECDSA/RSA over SHA-256). */
function opensslNonceRequest(name: string, consumer: string): Record<string, string> {
  const timestamp = new Date().toISOString();
  writeFileSync(join(work, `${name}.nreq`), nonceRequestMessage('p1', consumer, timestamp));
  if (name === 'ed25519' || name === 'san') {
    openssl('pkeyutl', '-sign', '-inkey', `${name}.key`, '-rawin', '-in', `${name}.nreq`, '-out', `${name}.nsig`);
  } else {
    openssl('dgst', '-sha256', '-sign', `${name}.key`, '-out', `${name}.nsig`, `${name}.nreq`);
  }
  return {
    consumerClusterID: consumer,
    providerClusterID: 'p1',
    timestamp,
    signature: readFileSync(join(work, `${name}.nsig`)).toString('base64'),
  };
}

beforeAll(async () => {
  issuer = await serveIssuer(dataDir, 'p1');
});
afterAll(async () => {
  await issuer.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('openssl interop', () => {
  it.each([
    ['ed25519', ['-algorithm', 'ed25519']],
    ['ecdsa-p256', ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']],
    ['rsa-2048', ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048']],
  ])(
    '%s: an openssl key, CSR and signature are accepted; openssl verifies the issued certificate',
    async (name, genpkey) => {
      const consumer = `openssl-${name}`;
      openssl('genpkey', ...genpkey, '-out', `${name}.key`);
      openssl('pkey', '-in', `${name}.key`, '-pubout', '-out', `${name}.pub`);
      openssl('req', '-new', '-key', `${name}.key`, '-subj', `/CN=${consumer}`, '-out', `${name}.csr`);
      const trusted = await cli([
        'issuer',
        'trust',
        '--data-dir',
        dataDir,
        '--cluster-id',
        consumer,
        '--public-key',
        join(work, `${name}.pub`),
      ]);
      expect(trusted.code).toBe(0);

      const client = issuerClient(issuer);
      try {
        const nonce = (await client.call('POST', '/v1/nonces', opensslNonceRequest(name, consumer))).body
          .nonce as string;
        const csrPem = readFileSync(join(work, `${name}.csr`), 'utf8');
        writeFileSync(join(work, `${name}.msg`), contextMessage('p1', consumer, nonce, csrPem));
        if (name === 'ed25519') {
          openssl('pkeyutl', '-sign', '-inkey', `${name}.key`, '-rawin', '-in', `${name}.msg`, '-out', `${name}.sig`);
        } else {
          openssl('dgst', '-sha256', '-sign', `${name}.key`, '-out', `${name}.sig`, `${name}.msg`);
        }
        const tenant = {
          apiVersion: 'credentials.clusterprofile.io/v1alpha1',
          kind: 'Tenant',
          metadata: { name: consumer },
          spec: {
            clusterID: consumer,
            providerClusterID: 'p1',
            nonce,
            publicKey: readFileSync(join(work, `${name}.pub`)).toString('base64'),
            csr: Buffer.from(csrPem).toString('base64'),
            signature: readFileSync(join(work, `${name}.sig`)).toString('base64'),
          },
        };
        const identity = await client.call('POST', '/v1/tenants', tenant);
        expect(identity.body.code).toBeUndefined();
        expect(identity.status).toBe(201);
        writeFileSync(join(work, `${name}.crt`), Buffer.from(identity.body.spec.authParams.signedCRT, 'base64'));
      } finally {
        await client.close();
      }
      expect(
        openssl('verify', '-CAfile', join(dataDir, 'client-ca.crt'), '-purpose', 'sslclient', `${name}.crt`).trim(),
      ).toBe(`${name}.crt: OK`);
      expect(openssl('x509', '-in', `${name}.crt`, '-noout', '-subject').trim()).toBe(`subject=CN = ${consumer}`);
      // The certificate is for the openssl key.
      expect(openssl('x509', '-in', `${name}.crt`, '-noout', '-pubkey')).toBe(
        readFileSync(join(work, `${name}.pub`), 'utf8'),
      );
    },
  );

  it('an openssl CSR asking for SANs is refused', async () => {
    openssl('genpkey', '-algorithm', 'ed25519', '-out', 'san.key');
    openssl('pkey', '-in', 'san.key', '-pubout', '-out', 'san.pub');
    openssl(
      'req',
      '-new',
      '-key',
      'san.key',
      '-subj',
      '/CN=openssl-san',
      '-addext',
      'subjectAltName=DNS:kubernetes.default',
      '-out',
      'san.csr',
    );
    expect(
      (
        await cli([
          'issuer',
          'trust',
          '--data-dir',
          dataDir,
          '--cluster-id',
          'openssl-san',
          '--public-key',
          join(work, 'san.pub'),
        ])
      ).code,
    ).toBe(0);
    const client = issuerClient(issuer);
    try {
      const nonce = (await client.call('POST', '/v1/nonces', opensslNonceRequest('san', 'openssl-san'))).body
        .nonce as string;
      const csrPem = readFileSync(join(work, 'san.csr'), 'utf8');
      writeFileSync(join(work, 'san.msg'), contextMessage('p1', 'openssl-san', nonce, csrPem));
      openssl('pkeyutl', '-sign', '-inkey', 'san.key', '-rawin', '-in', 'san.msg', '-out', 'san.sig');
      const answer = await client.call('POST', '/v1/tenants', {
        apiVersion: 'credentials.clusterprofile.io/v1alpha1',
        kind: 'Tenant',
        metadata: { name: 'openssl-san' },
        spec: {
          clusterID: 'openssl-san',
          providerClusterID: 'p1',
          nonce,
          publicKey: readFileSync(join(work, 'san.pub')).toString('base64'),
          csr: Buffer.from(csrPem).toString('base64'),
          signature: readFileSync(join(work, 'san.sig')).toString('base64'),
        },
      });
      expect(answer).toMatchObject({ status: 403, body: { code: 'ERR_TENANT_CSR_SANS' } });
    } finally {
      await client.close();
    }
  });

  it.each(['ed25519', 'ecdsa-p256'] as const)(
    '%s: openssl verifies a signature our core made over the documented message',
    async (algorithm) => {
      const keyFile = join(work, `ours-${algorithm}.key`);
      const made = await cli(['keygen', '--out', keyFile, '--algorithm', algorithm]);
      writeFileSync(`${keyFile}.pub`, made.stdout);
      const csrPem = openssl('req', '-new', '-key', keyFile, '-subj', '/CN=c1');
      const nonce = Buffer.alloc(64, 3).toString('base64');
      const message = contextMessage('p1', 'c1', nonce, csrPem);
      const der = Buffer.from(csrPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
      const signature = signTenant(createPrivateKey(readFileSync(keyFile, 'utf8')), {
        providerClusterID: 'p1',
        consumerClusterID: 'c1',
        nonce,
        csrDer: der,
      });
      writeFileSync(join(work, 'ours.msg'), message);
      writeFileSync(join(work, 'ours.sig'), signature);
      const output =
        algorithm === 'ed25519'
          ? openssl(
              'pkeyutl',
              '-verify',
              '-pubin',
              '-inkey',
              `${keyFile}.pub`,
              '-rawin',
              '-in',
              'ours.msg',
              '-sigfile',
              'ours.sig',
            )
          : openssl('dgst', '-sha256', '-verify', `${keyFile}.pub`, '-signature', 'ours.sig', 'ours.msg');
      expect(output).toMatch(/Verified OK|Signature Verified Successfully/);
    },
  );
});
