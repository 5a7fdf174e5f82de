/**
 * Prometheus metrics through prom-client (the Node.js Prometheus client most exporters use; no native code, two small
 * dependencies), for the two owners that export metrics: the fleet manager (src/fleet/metrics.ts) and the tenant-cert
 * issuer (src/issuer/metrics.ts). What they share lives here:
 *
 * - a registry per owner: nothing lands in prom-client's global one unless a caller merges it
 *   (`Registry.merge([owned.registry, register])`);
 * - the name rule: every metric of an owner is named `clusterprofile_<owner>_…` (prom-client's default process metrics
 *   too, when an owner asks for them), checked when it is defined;
 * - typed counter, gauge and histogram definitions registered into the owner's registry, and the text exposition.
 *
 * Users scrape these names, labels and help texts (docs/reference/metrics.md lists them): a change to one is a change
 * of the package's interface.
 */
import {
  collectDefaultMetrics,
  Counter,
  type CounterConfiguration,
  Gauge,
  type GaugeConfiguration,
  Histogram,
  type HistogramConfiguration,
  Registry,
} from 'prom-client';

/** Who owns a registry: the prefix of its metric names is `clusterprofile_<owner>_`. */
export type MetricsOwner = 'fleet' | 'issuer';

/** A metric's definition: everything prom-client takes but where it is registered (always the owner's registry). */
type Definition<C> = Omit<C, 'registers'>;

/** One owner's metrics: its registry, the metrics defined into it and their text exposition. */
export class OwnedMetrics {
  /** The owner's registry (merge it into an application's own to expose these metrics there). */
  readonly registry = new Registry();
  /** `clusterprofile_<owner>_`: every metric name of this owner starts with it. */
  readonly prefix: string;

  constructor(owner: MetricsOwner) {
    this.prefix = `clusterprofile_${owner}_`;
  }

  counter<T extends string = string>(definition: Definition<CounterConfiguration<T>>): Counter<T> {
    return new Counter<T>({ ...definition, name: this.#named(definition.name), registers: [this.registry] });
  }

  gauge<T extends string = string>(definition: Definition<GaugeConfiguration<T>>): Gauge<T> {
    return new Gauge<T>({ ...definition, name: this.#named(definition.name), registers: [this.registry] });
  }

  histogram<T extends string = string>(definition: Definition<HistogramConfiguration<T>>): Histogram<T> {
    return new Histogram<T>({ ...definition, name: this.#named(definition.name), registers: [this.registry] });
  }

  /** prom-client's default process and Node.js metrics (CPU, memory, event-loop lag, handles, GC), prefixed. */
  processMetrics(): void {
    collectDefaultMetrics({ register: this.registry, prefix: this.prefix });
  }

  /** The text exposition (`text/plain; version=0.0.4`). */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  #named(name: string): string {
    if (!name.startsWith(this.prefix)) {
      throw new RangeError(`metric ${name} is not named ${this.prefix}…`);
    }
    return name;
  }
}
