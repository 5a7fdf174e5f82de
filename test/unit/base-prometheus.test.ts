import { describe, expect, it } from 'vitest';
import { OwnedMetrics } from '../../src/base/prometheus.js';

describe('core prometheus: one registry per owner, names under the owner', () => {
  it('defines counters, gauges and histograms into its own registry only', async () => {
    const fleet = new OwnedMetrics('fleet');
    const issuer = new OwnedMetrics('issuer');
    fleet
      .counter({ name: 'clusterprofile_fleet_things_total', help: 'Things.', labelNames: ['kind'] })
      .inc({ kind: 'a' });
    fleet.gauge({ name: 'clusterprofile_fleet_level', help: 'Level.' }).set(3);
    fleet.histogram({ name: 'clusterprofile_fleet_seconds', help: 'Seconds.', buckets: [1] }).observe(0.5);
    const text = await fleet.text();
    expect(text).toContain(
      '# TYPE clusterprofile_fleet_things_total counter\nclusterprofile_fleet_things_total{kind="a"} 1',
    );
    expect(text).toContain('# TYPE clusterprofile_fleet_level gauge\nclusterprofile_fleet_level 3');
    expect(text).toContain('clusterprofile_fleet_seconds_bucket{le="1"} 1');
    expect(await issuer.text()).toBe('\n');
    expect(fleet.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it("refuses a name outside the owner's prefix (the check itself can fail)", () => {
    const issuer = new OwnedMetrics('issuer');
    expect(issuer.prefix).toBe('clusterprofile_issuer_');
    expect(() => issuer.counter({ name: 'clusterprofile_fleet_things_total', help: 'x' })).toThrow(
      /not named clusterprofile_issuer_/,
    );
  });

  it("prefixes prom-client's process metrics with the owner's prefix", async () => {
    const issuer = new OwnedMetrics('issuer');
    issuer.processMetrics();
    const names = (await issuer.registry.getMetricsAsJSON()).map((metric) => metric.name);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((name) => name.startsWith('clusterprofile_issuer_'))).toBe(true);
  });
});
