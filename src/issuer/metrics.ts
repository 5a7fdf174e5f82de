/**
 * The issuer's metrics in the Prometheus text format, through prom-client (../base/prometheus.ts), on a registry of
 * its own (nothing lands in prom-client's global one). Labels are bounded: the handshake step, the result, an error
 * code of the registry and the signer name — never a consumer ID, a nonce or anything else a client chooses.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { OwnedMetrics } from '../base/prometheus.js';
import { BACKGROUND_LOOPS } from './background.js';

/** The metric names, for dashboards, alerts and tests. */
export const ISSUER_METRICS = {
  handshakes: 'clusterprofile_issuer_handshakes_total',
  duration: 'clusterprofile_issuer_handshake_duration_seconds',
  noncesOutstanding: 'clusterprofile_issuer_nonces_outstanding',
  certificates: 'clusterprofile_issuer_certificates_issued_total',
  ready: 'clusterprofile_issuer_ready',
  servingNotAfter: 'clusterprofile_issuer_serving_certificate_not_after_seconds',
  servingReloads: 'clusterprofile_issuer_serving_certificate_reloads_total',
  backgroundFailures: 'clusterprofile_issuer_background_failures_total',
} as const;

/** The two requests of a handshake: `POST /v1/nonces` and `POST /v1/tenants`. */
export type HandshakeStep = 'nonce' | 'tenant';

/** What the gauges read when scraped. */
export interface IssuerGaugeSource {
  /** Unconsumed, unexpired nonces (of every consumer; with --state kubernetes, this replica's: ./state/issuer-state.ts). */
  noncesOutstanding(): number | Promise<number>;
}

export class IssuerMetrics {
  readonly #metrics = new OwnedMetrics('issuer');
  readonly #handshakes: Counter<'step' | 'result' | 'code'>;
  readonly #duration: Histogram<'step' | 'result'>;
  readonly #certificates: Counter<'signer'>;
  readonly #servingNotAfter: Gauge;
  readonly #servingReloads: Counter<'result'>;
  readonly #backgroundFailures: Counter<'loop'>;
  #ready: () => boolean = () => false;

  /** `processMetrics`: prom-client's default process and Node.js metrics (CPU, memory, event loop lag, handles). */
  constructor(source: IssuerGaugeSource, options: { processMetrics?: boolean } = {}) {
    const metrics = this.#metrics;
    this.#handshakes = metrics.counter({
      name: ISSUER_METRICS.handshakes,
      help: 'Handshake requests by step (nonce, tenant), result (ok, refused, failed) and error code ("" when ok).',
      labelNames: ['step', 'result', 'code'],
    });
    this.#duration = metrics.histogram({
      name: ISSUER_METRICS.duration,
      help: "Time from a handshake request's headers to its answer, by step and result.",
      labelNames: ['step', 'result'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
    this.#certificates = metrics.counter({
      name: ISSUER_METRICS.certificates,
      help: 'Client certificates issued, by signer (embedded, kubernetes).',
      labelNames: ['signer'],
    });
    metrics.gauge({
      name: ISSUER_METRICS.noncesOutstanding,
      help: 'Nonces issued and neither used nor expired (with --state kubernetes: issued by this replica and not spent at it).',
      async collect() {
        this.set(await source.noncesOutstanding());
      },
    });
    const ready = (): boolean => this.#ready();
    metrics.gauge({
      name: ISSUER_METRICS.ready,
      help: '1 when the last /readyz evaluation passed, else 0.',
      collect() {
        this.set(ready() ? 1 : 0);
      },
    });
    this.#servingNotAfter = metrics.gauge({
      name: ISSUER_METRICS.servingNotAfter,
      help: 'notAfter of the HTTPS certificate served now, in seconds since the epoch.',
    });
    this.#servingReloads = metrics.counter({
      name: ISSUER_METRICS.servingReloads,
      help: 'New --tls-cert-file pairs seen, by result (reloaded; refused: the previous pair is kept).',
      labelNames: ['result'],
    });
    this.#backgroundFailures = metrics.counter({
      name: ISSUER_METRICS.backgroundFailures,
      help: 'Failed runs of a background loop, by loop (nonce-collection, serving-reload, tenant-reconciler).',
      labelNames: ['loop'],
    });
    // Every loop's series from the start, at 0: an alert on increase() then sees the first failure too.
    for (const loop of BACKGROUND_LOOPS) this.#backgroundFailures.inc({ loop }, 0);
    if (options.processMetrics !== false) {
      metrics.processMetrics();
    }
  }

  /**
   * One answered handshake request. `code`: the error code answered, undefined when it succeeded; a 4xx code is a
   * refusal (the client's request), anything else a failure (the issuer's side).
   */
  handshake(step: HandshakeStep, seconds: number, status: number, code: string | undefined): void {
    const result = code === undefined ? 'ok' : status < 500 ? 'refused' : 'failed';
    this.#handshakes.inc({ step, result, code: code ?? '' });
    this.#duration.observe({ step, result }, seconds);
  }

  /** What the readiness gauge reads (the server's last /readyz outcome). */
  setReadySource(ready: () => boolean): void {
    this.#ready = ready;
  }

  /** The HTTPS certificate served from now on. */
  servingCertificate(notAfter: Date): void {
    this.#servingNotAfter.set(Math.floor(notAfter.getTime() / 1000));
  }

  servingReload(result: 'reloaded' | 'refused'): void {
    this.#servingReloads.inc({ result });
  }

  /** A failed run of a background loop (./background.ts). */
  backgroundFailure(loop: string): void {
    this.#backgroundFailures.inc({ loop });
  }

  certificateIssued(signer: string): void {
    this.#certificates.inc({ signer });
  }

  /** The issuer's own registry. */
  get registry(): Registry {
    return this.#metrics.registry;
  }

  /** The text exposition (`text/plain; version=0.0.4`). */
  text(): Promise<string> {
    return this.#metrics.text();
  }

  get contentType(): string {
    return this.#metrics.contentType;
  }
}
