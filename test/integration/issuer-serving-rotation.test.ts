/**
 * `issuer serve --tls-cert-file/--tls-key-file` follows a rotated Secret without a restart: the files laid out as the
 * kubelet lays out a Secret volume (tls.crt -> ..data/tls.crt, ..data -> a timestamped dir swapped by rename), a real
 * issuer process, and new TLS connections that report the certificate they were given.
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request as httpsRequest, Agent } from 'node:https';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createTestCa, type KeyPairPem } from '../helpers/tls.js';
import { cli, serveIssuer, type IssuerProcess } from '../helpers/issuer-process.js';

const work = mkdtempSync(join(tmpdir(), 'cpc-issuer-rotation-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let running: IssuerProcess[] = [];
afterEach(async () => {
  await Promise.all(running.map((issuer) => issuer.stop()));
  running = [];
});

/** A Secret volume as the kubelet writes it; `update` swaps `..data` to a new timestamped dir, as the kubelet does. */
function secretVolume(dir: string, first: { 'tls.crt': string; 'tls.key': string }) {
  mkdirSync(dir);
  let generation = 0;
  let current = '';
  const update = (files: { 'tls.crt': string; 'tls.key': string }) => {
    const next = `..2026_11_25_00_00_0${++generation}.${process.pid}`;
    mkdirSync(join(dir, next));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, next, name), text, { mode: 0o600 });
    symlinkSync(next, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    if (current !== '') rmSync(join(dir, current), { recursive: true });
    current = next;
  };
  update(first);
  symlinkSync('..data/tls.crt', join(dir, 'tls.crt'));
  symlinkSync('..data/tls.key', join(dir, 'tls.key'));
  return { update, dataFile: (name: string) => join(dir, current, name) };
}

/** The serial of the certificate a new TLS connection is served (verified against `ca`). */
function servedSerial(url: string, ca: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca, servername: 'localhost' }, () => {
      const serial = socket.getPeerCertificate().serialNumber.toUpperCase();
      socket.end();
      resolve(serial);
    });
    socket.on('error', reject);
  });
}

function serialOf(pair: KeyPairPem): string {
  return new X509Certificate(pair.cert).serialNumber.toUpperCase();
}

function get(url: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpsRequest(url, { ca, agent: new Agent({ keepAlive: false }) }, (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

describe('--tls-cert-file/--tls-key-file rotation', () => {
  it('a ..data swap is served to new connections; a mismatched, expired or half-written pair is logged coded and the served one kept', async () => {
    const ca = await createTestCa('issuer-rotation-ca');
    const first = await ca.issueServerCert();
    const second = await ca.issueServerCert();
    const third = await ca.issueServerCert();
    const expired = await ca.issueServerCert({
      notBefore: new Date(Date.now() - 2 * 86_400_000),
      notAfter: new Date(Date.now() - 86_400_000),
    });
    const volume = secretVolume(join(work, 'tls'), { 'tls.crt': first.cert, 'tls.key': first.key });
    const dataDir = join(work, 'data');
    const issuer = await serveIssuer(dataDir, 'p1', [
      '--tls-cert-file',
      join(work, 'tls', 'tls.crt'),
      '--tls-key-file',
      join(work, 'tls', 'tls.key'),
      '--tls-reload-interval',
      '1s',
    ]);
    running.push(issuer);
    expect(await servedSerial(issuer.url, ca.cert)).toBe(serialOf(first));
    expect(issuer.log()).toContain(`serving certificate: serial ${serialOf(first)}, notAfter `);

    // cert-manager renewed the Secret: the kubelet swaps ..data.
    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    await expect
      .poll(() => servedSerial(issuer.url, ca.cert), { timeout: 10_000, interval: 250 })
      .toBe(serialOf(second));
    expect(issuer.log()).toContain(
      `serving certificate reloaded: serial ${serialOf(second)}, notAfter ${new Date(new X509Certificate(second.cert).validTo).toISOString()} from ${join(work, 'tls', 'tls.crt')}`,
    );

    // A Secret whose key is not the certificate's: refused, the served pair stays.
    volume.update({ 'tls.crt': third.cert, 'tls.key': first.key });
    await expect
      .poll(() => issuer.log(), { timeout: 10_000, interval: 250 })
      .toMatch(
        /serving certificate refused, still serving the previous one: ERR_ISSUER_CONFIG: --tls-key-file \S+ is not the key of the certificate/,
      );
    expect(await servedSerial(issuer.url, ca.cert)).toBe(serialOf(second));

    // An expired pair: refused the same way.
    volume.update({ 'tls.crt': expired.cert, 'tls.key': expired.key });
    await expect
      .poll(() => issuer.log(), { timeout: 10_000, interval: 250 })
      .toMatch(
        /serving certificate refused, still serving the previous one: ERR_ISSUER_CONFIG: the certificate in \S+ is not valid now/,
      );
    expect(await servedSerial(issuer.url, ca.cert)).toBe(serialOf(second));

    // Written in place by hand, the certificate half done: refused; once whole, served.
    volume.update({ 'tls.crt': second.cert, 'tls.key': second.key });
    writeFileSync(volume.dataFile('tls.key'), third.key);
    writeFileSync(volume.dataFile('tls.crt'), third.cert.slice(0, 200));
    await expect
      .poll(() => issuer.log(), { timeout: 10_000, interval: 250 })
      .toMatch(
        /serving certificate refused, still serving the previous one: ERR_ISSUER_CONFIG: --tls-cert-file \S+: expected one or more PEM certificates \("CERTIFICATE"\), found no PEM block/,
      );
    expect(await servedSerial(issuer.url, ca.cert)).toBe(serialOf(second));
    writeFileSync(volume.dataFile('tls.crt'), third.cert);
    await expect
      .poll(() => servedSerial(issuer.url, ca.cert), { timeout: 10_000, interval: 250 })
      .toBe(serialOf(third));

    // The metrics tell which certificate is served and how many pairs were refused; the log quotes no key.
    const metrics = await get(`${issuer.url}/metrics`, ca.cert);
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain(
      `clusterprofile_issuer_serving_certificate_not_after_seconds ${Math.floor(Date.parse(new X509Certificate(third.cert).validTo) / 1000)}`,
    );
    expect(metrics.body).toContain('clusterprofile_issuer_serving_certificate_reloads_total{result="reloaded"} 2');
    // Once per bad pair, not once per poll (a poll may land between the two hand-made writes: one more).
    const refused = Number(/serving_certificate_reloads_total\{result="refused"\} (\d+)/.exec(metrics.body)?.[1]);
    expect(refused).toBeGreaterThanOrEqual(3);
    expect(refused).toBeLessThanOrEqual(4);
    // Every failed poll is a failed run of the reload loop; a refused pair does not fail readiness (the previous serves).
    const failedRuns = Number(/background_failures_total\{loop="serving-reload"\} (\d+)/.exec(metrics.body)?.[1]);
    expect(failedRuns).toBeGreaterThanOrEqual(refused);
    expect((await get(`${issuer.url}/readyz`, ca.cert)).status).toBe(200);
    for (const pair of [first, second, third, expired]) expect(issuer.log()).not.toContain(pair.key.split('\n')[1]!);
    expect(issuer.log()).not.toContain('BEGIN');
  });

  it('--tls-reload-interval is a duration of 1s..10m, refused coded otherwise', async () => {
    const result = await cli([
      'issuer',
      'serve',
      '--data-dir',
      join(work, 'data-bad'),
      '--cluster-id',
      'p1',
      '--listen',
      '127.0.0.1:0',
      '--tls-reload-interval',
      '10ms',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ERR_ISSUER_CONFIG');
    expect(result.stderr).toContain('--tls-reload-interval');
  });
});
