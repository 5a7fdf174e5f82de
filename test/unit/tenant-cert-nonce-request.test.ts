// The nonce request's proof of possession (security review: nonce starvation) and what the issuer's HTTPS answers
// may say to a client that is not authenticated (security review: information disclosure).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CredentialsError } from '../../src/base/errors.js';
import { generateClusterKeyPair, parsePrivateKeyPem } from '../../src/wire/tenant-cert/keys.js';
import {
  nonceRequestMessage,
  NONCE_REQUEST_PURPOSE,
  SIGNATURE_PURPOSE,
  tenantMessage,
  verifyTenant,
} from '../../src/wire/tenant-cert/message.js';
import { processPollResponse } from '../../src/issuer/signer/kubernetes-signer.js';
import { errorAnswer } from '../../src/issuer/server.js';
import { buildTenant, issuerFixture, type IssuerFixture } from '../helpers/issuer-fixtures.js';

let f: IssuerFixture;
afterEach(async () => {
  await f?.close();
});

function field(text: string | Buffer): Buffer {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length);
  return Buffer.concat([length, bytes]);
}

describe('nonce request message', () => {
  it('is the length-prefixed (purpose, provider, consumer, timestamp), with a purpose of its own', () => {
    const message = nonceRequestMessage({
      providerClusterID: 'p1',
      consumerClusterID: 'c1',
      timestamp: '2026-03-01T12:00:00.000Z',
    });
    expect(message).toEqual(
      Buffer.concat([
        field('clusterprofile-credentials/tenant-cert/v1 nonce request'),
        field('p1'),
        field('c1'),
        field('2026-03-01T12:00:00.000Z'),
      ]),
    );
    expect(NONCE_REQUEST_PURPOSE).not.toBe(SIGNATURE_PURPOSE);
    // Field boundaries are unambiguous: moving a character between IDs changes the bytes.
    expect(nonceRequestMessage({ providerClusterID: 'p1c', consumerClusterID: '1', timestamp: 't' })).not.toEqual(
      nonceRequestMessage({ providerClusterID: 'p1', consumerClusterID: 'c1', timestamp: 't' }),
    );
  });

  it('a nonce request signature is no Tenant signature', async () => {
    f = await issuerFixture();
    const key = await f.consumer('c1');
    const request = f.nonceRequest('c1');
    const tenant = await buildTenant({
      privateKey: key,
      consumerClusterID: 'c1',
      providerClusterID: 'p1',
      nonce: request.timestamp,
    });
    const csrDer = Buffer.from(
      Buffer.from(tenant.spec.csr, 'base64')
        .toString('utf8')
        .replace(/-----[^-]+-----/g, '')
        .replace(/\s+/g, ''),
      'base64',
    );
    const context = { providerClusterID: 'p1', consumerClusterID: 'c1', nonce: request.timestamp, csrDer };
    expect(verifyTenant(key, context, Buffer.from(request.signature, 'base64'))).toBe(false);
    expect(
      tenantMessage(context)
        .subarray(4, 4 + SIGNATURE_PURPOSE.length)
        .toString(),
    ).toBe(SIGNATURE_PURPOSE);
  });
});

describe('POST /v1/nonces needs proof of possession (nonce starvation)', () => {
  /** The victim holds one outstanding nonce; every refusal below must leave it outstanding and usable. */
  async function victim(): Promise<{ nonce: string; key: ReturnType<typeof parsePrivateKeyPem> }> {
    f = await issuerFixture();
    const key = await f.consumer('victim');
    await f.consumer('attacker');
    return { nonce: await f.nonce('victim'), key };
  }

  async function stillWorks(nonce: string, key: ReturnType<typeof parsePrivateKeyPem>): Promise<void> {
    expect(f.nonces.outstanding('victim', f.clock.now())).toEqual([nonce]);
    const tenant = await buildTenant({ privateKey: key, consumerClusterID: 'victim', providerClusterID: 'p1', nonce });
    await expect(f.issuer.acceptTenant(tenant)).resolves.toMatchObject({ consumerClusterID: 'victim' });
  }

  it("20 requests signed by another key (over the limit of 16): all refused, the victim's nonce survives", async () => {
    const { nonce, key } = await victim();
    const stranger = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    for (let index = 0; index < 20; index++) {
      await expect(f.issuer.issueNonce(f.nonceRequest('victim', { key: stranger }))).rejects.toMatchObject({
        code: 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID',
        path: '$.signature',
      });
    }
    await stillWorks(nonce, key);
  });

  it("a trusted consumer cannot ask in another consumer's name with its own key", async () => {
    const { nonce, key } = await victim();
    const attackerKey = await f.consumer('attacker');
    await expect(f.issuer.issueNonce(f.nonceRequest('victim', { key: attackerKey }))).rejects.toMatchObject({
      code: 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID',
    });
    await stillWorks(nonce, key);
  });

  it('an unsigned request (the old shape) is an invalid document', async () => {
    const { nonce, key } = await victim();
    await expect(f.issuer.issueNonce({ consumerClusterID: 'victim' })).rejects.toMatchObject({
      code: 'ERR_TENANT_INVALID_DOCUMENT',
    });
    const { signature: _signature, ...unsigned } = f.nonceRequest('victim');
    await expect(f.issuer.issueNonce(unsigned)).rejects.toMatchObject({
      code: 'ERR_TENANT_INVALID_DOCUMENT',
      path: '$.signature',
    });
    await stillWorks(nonce, key);
  });

  it("a signature that is not base64, or is the victim's over other fields", async () => {
    const { nonce, key } = await victim();
    await expect(f.issuer.issueNonce({ ...f.nonceRequest('victim'), signature: '!!!' })).rejects.toMatchObject({
      code: 'ERR_TENANT_BAD_BASE64',
      path: '$.signature',
    });
    // The victim's genuine signature, with the timestamp moved by a second: the signature covers the timestamp.
    const genuine = f.nonceRequest('victim');
    const moved = new Date(f.clock.now().getTime() + 1000).toISOString();
    await expect(f.issuer.issueNonce({ ...genuine, timestamp: moved })).rejects.toMatchObject({
      code: 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID',
    });
    await stillWorks(nonce, key);
  });

  it('signed for another provider: refused as a mismatch; a signature over another provider ID does not verify here', async () => {
    const { nonce, key } = await victim();
    const other = { ...f.nonceRequest('victim'), providerClusterID: 'p2' };
    await expect(f.issuer.issueNonce(other)).rejects.toMatchObject({
      code: 'ERR_TENANT_PROVIDER_MISMATCH',
      path: '$.providerClusterID',
    });
    // Made for p2 but relabelled p1: the signature does not cover p1.
    const { signNonceRequest } = await import('../../src/wire/tenant-cert/message.js');
    const forP2 = signNonceRequest(key, { providerClusterID: 'p2', consumerClusterID: 'victim' }, f.clock.now());
    await expect(f.issuer.issueNonce({ ...forP2, providerClusterID: 'p1' })).rejects.toMatchObject({
      code: 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID',
    });
    await stillWorks(nonce, key);
  });

  it('a timestamp more than 5 minutes off either way is stale (a replay of an old request); 5 minutes is still fine', async () => {
    const { nonce, key } = await victim();
    const now = f.clock.now().getTime();
    for (const offset of [-300_001, 300_001, -86_400_000]) {
      await expect(f.issuer.issueNonce(f.nonceRequest('victim', { at: new Date(now + offset) }))).rejects.toMatchObject(
        {
          code: 'ERR_TENANT_NONCE_REQUEST_STALE',
          path: '$.timestamp',
        },
      );
    }
    await stillWorks(nonce, key);
    await expect(f.issuer.issueNonce(f.nonceRequest('victim', { at: new Date(now - 300_000) }))).resolves.toMatchObject(
      { consumerClusterID: 'victim' },
    );
    await expect(f.issuer.issueNonce(f.nonceRequest('victim', { at: new Date(now + 300_000) }))).resolves.toMatchObject(
      { consumerClusterID: 'victim' },
    );
  });

  it("the victim's own signed request, replayed (even with an ECDSA signature re-encoded), is answered once", async () => {
    f = await issuerFixture();
    const key = await f.consumer('victim', 'ecdsa-p256');
    const captured = f.nonceRequest('victim');
    const nonce = (await f.issuer.issueNonce(captured)).nonce;
    for (let index = 0; index < 20; index++) {
      await expect(f.issuer.issueNonce(captured)).rejects.toMatchObject({
        code: 'ERR_TENANT_NONCE_REQUEST_REPLAYED',
        path: '$.signature',
      });
    }
    // Another valid signature over the same request (ECDSA signs with fresh randomness): still the same request.
    const { signNonceRequest } = await import('../../src/wire/tenant-cert/message.js');
    const resigned = signNonceRequest(
      key,
      { providerClusterID: 'p1', consumerClusterID: 'victim' },
      new Date(captured.timestamp),
    );
    expect(resigned.signature).not.toBe(captured.signature);
    await expect(f.issuer.issueNonce(resigned)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_REQUEST_REPLAYED' });
    await stillWorks(nonce, key);
    // Once the timestamp has left the window the record may go: a replay is then stale.
    f.clock.advance(300_001);
    await expect(f.issuer.issueNonce(captured)).rejects.toMatchObject({ code: 'ERR_TENANT_NONCE_REQUEST_STALE' });
  });

  it('an unknown consumer is refused before anything is issued', async () => {
    f = await issuerFixture();
    const key = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    await expect(f.issuer.issueNonce(f.nonceRequest('stranger', { key }))).rejects.toMatchObject({
      code: 'ERR_TENANT_UNKNOWN_CONSUMER',
      path: '$.consumerClusterID',
    });
    expect(f.nonces.outstanding('stranger', f.clock.now())).toEqual([]);
  });

  it('the consumer itself still rotates through its own nonces (at most 16 outstanding)', async () => {
    const { nonce } = await victim();
    for (let index = 0; index < 16; index++) {
      await f.nonce('victim');
    }
    expect(f.nonces.outstanding('victim', f.clock.now())).toHaveLength(16);
    expect(f.nonces.outstanding('victim', f.clock.now())).not.toContain(nonce);
  });

  it('logs one line per decision, naming the code', async () => {
    const lines: string[] = [];
    f = await issuerFixture({ log: (line) => lines.push(line) });
    await f.consumer('c1');
    await f.nonce('c1');
    const stranger = parsePrivateKeyPem(generateClusterKeyPair().privateKeyPem);
    await f.issuer.issueNonce(f.nonceRequest('c1', { key: stranger })).catch(() => undefined);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^nonce issued for c1, expires /);
    expect(lines[1]).toMatch(/^nonce request c1: refused ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID: /);
  });
});

describe('error answers to unauthenticated clients (information disclosure)', () => {
  it('a damaged trust record: the client gets the code and a generic message; the issuer log has the file', async () => {
    const lines: string[] = [];
    f = await issuerFixture({ log: (line) => lines.push(line) });
    await f.consumer('c1');
    const request = f.nonceRequest('c1');
    const file = join(f.dir, 'trusted', 'c1.json');
    writeFileSync(
      file,
      '{"clusterID":"c1","publicKey":"-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----\\n","groups":[],"addedAt":"2026-03-01T12:00:00Z"}\n',
    );
    const error = await f.issuer.issueNonce(request).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'ERR_ISSUER_TRUST_RECORD' });
    const answer = errorAnswer(error);
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({
      code: 'ERR_ISSUER_TRUST_RECORD',
      message: 'internal error (details in the issuer log)',
    });
    expect(JSON.stringify(answer.body)).not.toContain(f.dir);
    expect(lines.at(-1)).toContain(file);
    expect(lines.at(-1)).toMatch(/^nonce request c1: refused ERR_ISSUER_TRUST_RECORD: /);
  });

  it('a data-dir error (a file path in its message and path) is answered generically with 500', () => {
    const answer = errorAnswer(
      new CredentialsError('ERR_ISSUER_DATA_DIR', 'cannot write /var/lib/issuer/nonces.journal: ENOSPC', {
        path: '/var/lib/issuer/nonces.journal',
      }),
    );
    expect(answer).toEqual({
      status: 500,
      body: { code: 'ERR_ISSUER_DATA_DIR', message: 'internal error (details in the issuer log)' },
    });
  });

  it("the Kubernetes signer's Status message and URL do not reach the client", () => {
    let error: unknown;
    try {
      processPollResponse({
        status: 403,
        body: {
          kind: 'Status',
          message:
            'certificatesigningrequests.certificates.k8s.io "x" is forbidden: User "system:serviceaccount:issuer:sa" cannot get',
        },
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toMatchObject({ code: 'ERR_ISSUER_SIGNER_DENIED' });
    const answer = errorAnswer(error);
    expect(answer.status).toBe(403);
    expect(answer.body).toEqual({
      code: 'ERR_ISSUER_SIGNER_DENIED',
      message: 'the certificate signer refused to sign (details in the issuer log)',
    });
    const unreachable = errorAnswer(
      new CredentialsError(
        'ERR_ISSUER_SIGNER_FAILED',
        'the API server is unreachable: connect ECONNREFUSED https://10.0.0.1:6443',
        { hint: 'x' },
      ),
    );
    expect(JSON.stringify(unreachable)).not.toMatch(/10\.0\.0\.1|ECONNREFUSED/);
    expect(unreachable.status).toBe(502);
  });

  it("refusals of the client's own request keep their message, JSON path and hint; a file path is never sent", () => {
    const answer = errorAnswer(
      new CredentialsError('ERR_TENANT_NONCE_EXPIRED', 'the nonce expired at X', {
        path: '$.spec.nonce',
        hint: 'ask again',
      }),
    );
    expect(answer).toEqual({
      status: 403,
      body: {
        code: 'ERR_TENANT_NONCE_EXPIRED',
        message: 'the nonce expired at X',
        path: '$.spec.nonce',
        hint: 'ask again',
      },
    });
    expect(
      errorAnswer(new CredentialsError('ERR_TENANT_BAD_PEM', 'x', { path: '/data/trusted/c1.json' })).body,
    ).toEqual({ code: 'ERR_TENANT_BAD_PEM', message: 'x' });
    expect(errorAnswer(new TypeError('boom at /data'))).toEqual({
      status: 500,
      body: { code: 'ERR_ISSUER_INTERNAL', message: 'internal error (details in the issuer log)' },
    });
  });
});
