// The security review's two findings against the issuer as a real process over real TLS:
// 1. nonce starvation — anyone who reached POST /v1/nonces could retire a consumer's outstanding nonces (16 at most);
//    now the request must be signed by the consumer's registered key, fresh, and a refusal touches no nonce;
// 2. information disclosure — error answers carried data-dir paths; now only the code and a generic message, the
//    details in the issuer's log.
import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issuerHandshake } from '../../src/providers/tenant-cert/consumer/handshake.js';
import { buildTenant } from '../../src/wire/tenant-cert/documents.js';
import { signNonceRequest } from '../../src/wire/tenant-cert/message.js';
import {
  cli,
  issuerClient,
  nonceRequest,
  serveIssuer,
  type IssuerClient,
  type IssuerProcess,
} from '../helpers/issuer-process.js';

const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-nreq-'));
const dataDir = join(work, 'data');
let issuer: IssuerProcess;
let client: IssuerClient;
const keys: Record<string, string> = {};

async function consumer(name: string): Promise<void> {
  const keyFile = join(work, `${name}.key`);
  const made = await cli(['keygen', '--out', keyFile]);
  expect(made.code).toBe(0);
  writeFileSync(`${keyFile}.pub`, made.stdout);
  expect(
    (await cli(['issuer', 'trust', '--data-dir', dataDir, '--cluster-id', name, '--public-key', `${keyFile}.pub`]))
      .code,
  ).toBe(0);
  keys[name] = keyFile;
}

async function tenantWith(name: string, nonce: string) {
  return buildTenant({
    privateKey: createPrivateKey(readFileSync(keys[name]!, 'utf8')),
    consumerClusterID: name,
    providerClusterID: 'p1',
    nonce,
  });
}

beforeAll(async () => {
  await consumer('victim');
  await consumer('attacker');
  issuer = await serveIssuer(dataDir, 'p1');
  client = issuerClient(issuer);
});
afterAll(async () => {
  await client.close();
  await issuer.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("nonce starvation: POST /v1/nonces needs the consumer's signature", () => {
  it("unsigned, forged, stolen-identity, stale and replayed requests (20 of each, over the limit of 16) are refused; the victim's nonce still works", async () => {
    // The victim's genuine request, which an attacker captured (and replays below).
    const captured = nonceRequest(keys['victim']!, 'victim');
    const issued = await client.call('POST', '/v1/nonces', captured);
    expect(issued.status).toBe(201);
    const outstanding = issued.body.nonce as string;

    const attackerKey = keys['attacker']!;
    const strangerKeyFile = join(work, 'stranger.key');
    expect((await cli(['keygen', '--out', strangerKeyFile])).code).toBe(0);
    const stale = nonceRequest(keys['victim']!, 'victim', 'p1', new Date(Date.now() - 10 * 60_000));
    const attempts: Array<[unknown, number, string]> = [
      // the old request shape: what anyone could send before
      [{ consumerClusterID: 'victim' }, 400, 'ERR_TENANT_INVALID_DOCUMENT'],
      // a key nobody registered
      [nonceRequest(strangerKeyFile, 'victim'), 403, 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID'],
      // another trusted consumer's key, in the victim's name
      [nonceRequest(attackerKey, 'victim'), 403, 'ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID'],
      // a genuine request of the victim, replayed 10 minutes later
      [stale, 403, 'ERR_TENANT_NONCE_REQUEST_STALE'],
      // the captured request, replayed at once
      [captured, 403, 'ERR_TENANT_NONCE_REQUEST_REPLAYED'],
    ];
    for (const [body, status, code] of attempts) {
      for (let index = 0; index < 20; index++) {
        const answer = await client.call('POST', '/v1/nonces', body);
        expect(answer).toMatchObject({ status, body: { code } });
      }
    }

    const identity = await client.call('POST', '/v1/tenants', await tenantWith('victim', outstanding));
    expect(identity.body.code).toBeUndefined();
    expect(identity.status).toBe(201);
    expect(issuer.log()).toMatch(/ issuer: nonce request victim: refused ERR_TENANT_NONCE_REQUEST_SIGNATURE_INVALID: /);
    expect(issuer.log()).toMatch(/ issuer: nonce request victim: refused ERR_TENANT_NONCE_REQUEST_STALE: /);
  });

  it("the attacker's own signed requests only rotate the attacker's nonces", async () => {
    const victimNonce = (await client.call('POST', '/v1/nonces', nonceRequest(keys['victim']!, 'victim'))).body
      .nonce as string;
    for (let index = 0; index < 20; index++) {
      expect((await client.call('POST', '/v1/nonces', nonceRequest(keys['attacker']!, 'attacker'))).status).toBe(201);
    }
    expect((await client.call('POST', '/v1/tenants', await tenantWith('victim', victimNonce))).status).toBe(201);
  });
});

describe("the plugin's client and a clock 10 minutes behind", () => {
  it("its first nonce request is refused as stale; it re-signs at the issuer's time (Date header) and gets its certificate", async () => {
    const privateKey = createPrivateKey(readFileSync(keys['victim']!, 'utf8'));
    const behind = () => new Date(Date.now() - 10 * 60_000);
    const lines: string[] = [];
    const ids = { consumerClusterID: 'victim', providerClusterID: 'p1' };
    const result = await issuerHandshake(
      {
        issuerURL: issuer.url,
        issuerCA: readFileSync(join(dataDir, 'serving-ca.crt'), 'utf8'),
        timeoutMs: 20_000,
        now: behind,
        initialBackoffMs: 10,
        log: (line) => lines.push(line),
      },
      ids,
      {
        nonceRequest: (at) => signNonceRequest(privateKey, ids, at),
        tenant: (nonce) => buildTenant({ privateKey, ...ids, nonce: nonce.nonce }),
      },
    );
    expect(result.attempts).toBe(2);
    expect(lines).toEqual([expect.stringContaining('attempt 1 failed (ERR_TENANT_NONCE_REQUEST_STALE: ')]);
    expect(result.identity.spec.consumerClusterID).toBe('victim');
    expect(result.clockOffsetMs).toBeGreaterThan(9 * 60_000);
  });
});

describe('information disclosure: error answers', () => {
  it('a damaged trust record: the answer is the code and a generic message, the data-dir path is only in the issuer log', async () => {
    await consumer('broken');
    const request = nonceRequest(keys['broken']!, 'broken');
    const record = join(dataDir, 'trusted', 'broken.json');
    writeFileSync(record, '{ not json');
    const answer = await client.call('POST', '/v1/nonces', request);
    expect(answer).toEqual({
      status: 500,
      body: { code: 'ERR_ISSUER_TRUST_RECORD', message: 'internal error (details in the issuer log)' },
    });
    expect(JSON.stringify(answer.body)).not.toContain(work);
    expect(issuer.log()).toContain(
      `nonce request broken: refused ERR_ISSUER_TRUST_RECORD: the trust record ${record} is not JSON`,
    );
    // The same for a Tenant naming that consumer.
    const tenant = await buildTenant({
      privateKey: createPrivateKey(readFileSync(keys['broken']!, 'utf8')),
      consumerClusterID: 'broken',
      providerClusterID: 'p1',
      nonce: Buffer.alloc(64).toString('base64'),
    });
    const refused = await client.call('POST', '/v1/tenants', tenant);
    expect(refused).toEqual({
      status: 500,
      body: { code: 'ERR_ISSUER_TRUST_RECORD', message: 'internal error (details in the issuer log)' },
    });
    expect(issuer.log()).toContain(
      `tenant broken: refused ERR_ISSUER_TRUST_RECORD: the trust record ${record} is not JSON`,
    );
  });
});
