/**
 * deploy/monitoring against the real processes: every metric the Grafana dashboards and the PrometheusRule query is
 * one that a running issuer (`clusterprofile issuer serve --state kubernetes`, the built bin, on the real control
 * plane) or a running ClusterProfileFleet (in this process, watching the real hub) exports; every PromQL expression
 * parses with Prometheus's own PromQL grammar (@prometheus-io/lezer-promql, the parser of Prometheus's web UI — the
 * check promtool's `check rules` would make of the syntax; promtool itself is not built here); the rule file is a
 * well-formed Prometheus rule file (groups, durations, severities, annotations whose $labels the expression keeps,
 * runbook links to headings of docs/guides/monitoring.md); and the alerts cover what an operator needs.
 */
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ClusterProfileFleet } from '../../src/library/index.js';
import { e2eContext, kubectl } from '../helpers/controlplane-e2e.js';
import { startIssuerProcess, type IssuerProcess } from '../helpers/issuer-process.js';
import { REPO } from './fixtures/tenant-cert-issuer.js';

const NS = 'monitoring-e2e';
const MONITORING = path.join(REPO, 'deploy', 'monitoring');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

interface Dashboard {
  uid: string;
  title: string;
  panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  templating: { list: Array<{ name: string; type: string; query?: { query: string } | string }> };
}

/** Every metric name a PromQL expression selects, or the syntax errors it has (positions and text around them). */
function promql(expr: string): { metrics: string[]; errors: string[] } {
  const tree = parser.parse(expr);
  const metrics: string[] = [];
  const errors: string[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(`at ${node.from}: "${expr.slice(Math.max(0, node.from - 10), node.to + 10)}"`);
      if (node.name === 'VectorSelector') {
        const name = node.node.getChild('Identifier');
        if (name !== null) metrics.push(expr.slice(name.from, name.to));
      }
    },
  });
  return { metrics, errors };
}

/** A Grafana expression as Prometheus receives it: its interval variables replaced (label variables are in strings). */
function grafanaToPromql(expr: string): string {
  return expr.replaceAll('$__rate_interval', '5m').replaceAll('$__interval', '1m').replaceAll('$__range', '1h');
}

/** The metric names of a Prometheus text exposition: each `# TYPE`, with a histogram's series names. */
function exportedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function admin(args: string[]): Promise<string> {
  const result = await kubectl(e2eContext().controlPlane.adminKubeconfig, args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

const rules = parse(await readFile(path.join(MONITORING, 'prometheusrule.yaml'), 'utf8')) as {
  apiVersion: string;
  kind: string;
  spec: { groups: Array<{ name: string; rules: Rule[] }> };
};
const dashboards = await Promise.all(
  ['dashboard-issuer.json', 'dashboard-fleet.json'].map(
    async (file) => [file, JSON.parse(await readFile(path.join(MONITORING, file), 'utf8')) as Dashboard] as const,
  ),
);
const guide = await readFile(path.join(REPO, 'docs', 'guides', 'monitoring.md'), 'utf8');
const allRules = rules.spec.groups.flatMap((group) => group.rules);

/** Every expression with where it comes from. */
const expressions: Array<{ where: string; expr: string }> = [
  ...allRules.map((rule) => ({ where: `rule ${rule.alert ?? rule.record}`, expr: rule.expr })),
  ...dashboards.flatMap(([file, dashboard]) =>
    dashboard.panels.flatMap((panel) =>
      panel.targets.map((target) => ({ where: `${file}: ${panel.title}`, expr: grafanaToPromql(target.expr) })),
    ),
  ),
];

describe('the PrometheusRule and the dashboards, read as Prometheus and Grafana read them', () => {
  it('every expression parses with the PromQL grammar', () => {
    expect(expressions.length).toBeGreaterThan(30);
    for (const { where, expr } of expressions) expect(promql(expr).errors, `${where}: ${expr}`).toEqual([]);
    // The check sees a broken expression.
    expect(promql('sum by (job) (rate(clusterprofile_issuer_ready[5m])').errors).not.toEqual([]);
    expect(promql('clusterprofile_issuer_ready{job="a"} >').errors).not.toEqual([]);
  });

  it('the rule file is a Prometheus rule file with what an alert needs: a duration, a severity, a summary and a runbook', () => {
    expect(rules).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    const groups = rules.spec.groups.map((group) => group.name);
    expect(new Set(groups).size).toBe(groups.length);
    const anchors = new Set(
      [...guide.matchAll(/^#+ (.+)$/gm)].map(([, heading]) =>
        heading!
          .toLowerCase()
          .replace(/[^\w\- ]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    const seen = new Set<string>();
    for (const rule of allRules) {
      const name = rule.alert ?? '';
      expect(name, JSON.stringify(rule)).toMatch(/^ClusterProfile[A-Z][A-Za-z]+$/);
      expect(['warning', 'critical']).toContain(rule.labels?.['severity']);
      const key = `${name}/${rule.labels?.['severity']}`;
      expect(seen.has(key), `${key} twice`).toBe(false);
      seen.add(key);
      if (rule.for !== undefined) expect(rule.for, name).toMatch(/^(\d+(ms|s|m|h|d|w|y))+$/);
      for (const field of ['summary', 'description', 'runbook_url'])
        expect(rule.annotations?.[field], name).toBeTruthy();
      // The runbook is this alert's section of the guide.
      const anchor = /docs\/guides\/monitoring\.md#(.+)$/.exec(rule.annotations!['runbook_url']!)?.[1];
      expect(anchor, name).toBe(name.toLowerCase());
      expect(anchors.has(anchor!), `docs/guides/monitoring.md has no heading for ${name}`).toBe(true);
      // Every label an annotation names survives the expression's aggregation.
      const kept = new Set(
        [...rule.expr.matchAll(/by \(([^)]*)\)/g)].flatMap(([, list]) => list!.split(',').map((l) => l.trim())),
      );
      const text = `${rule.annotations!['summary']} ${rule.annotations!['description']}`;
      for (const [, label] of text.matchAll(/\$labels\.(\w+)/g))
        expect(kept.has(label!), `${name}: $labels.${label}`).toBe(true);
    }
  });

  it('the alerts cover what an operator needs', () => {
    const queried = (name: string) =>
      allRules.filter((rule) => promql(rule.expr).metrics.includes(name)).map((rule) => rule.alert);
    for (const metric of [
      'clusterprofile_issuer_handshakes_total',
      'clusterprofile_issuer_nonces_outstanding',
      'clusterprofile_issuer_serving_certificate_not_after_seconds',
      'clusterprofile_issuer_background_failures_total',
      'clusterprofile_fleet_clusters',
      'clusterprofile_fleet_credential_fetch_failures_total',
      'clusterprofile_fleet_hub_watch_errors_total',
    ]) {
      expect(queried(metric), `an alert on ${metric}`).not.toEqual([]);
    }
  });

  it('each dashboard has a data source variable and filters every query by namespace and job', () => {
    for (const [file, dashboard] of dashboards) {
      expect(
        dashboard.templating.list.map((variable) => variable.name),
        file,
      ).toEqual(['datasource', 'namespace', 'job']);
      for (const panel of dashboard.panels) {
        for (const target of panel.targets) {
          expect(target.expr, `${file}: ${panel.title}`).toContain('namespace=~"$namespace", job=~"$job"');
        }
      }
    }
  });
});

describe('every metric they query is exported by the running processes', () => {
  let issuer: IssuerProcess;
  let fleet: ClusterProfileFleet;
  let metricsPort: number;
  beforeAll(async () => {
    await admin(['create', 'namespace', NS]);
    // The fleet watches ClusterProfiles: their CRD, as fleet.test.ts installs it.
    await admin(['apply', '-f', path.join(REPO, 'schemas', 'crd', 'multicluster.x-k8s.io_clusterprofiles.yaml')]);
    await admin(['wait', '--for=condition=Established', '--timeout=60s', 'crd/clusterprofiles.multicluster.x-k8s.io']);
    metricsPort = await freePort();
    const { controlPlane } = e2eContext();
    issuer = await startIssuerProcess([
      '--state',
      'kubernetes',
      '--namespace',
      NS,
      '--kubeconfig',
      controlPlane.adminKubeconfig,
      '--listen',
      '127.0.0.1:0',
      '--cluster-id',
      'provider-monitoring',
      '--metrics-listen',
      `127.0.0.1:${metricsPort}`,
    ]);
    fleet = new ClusterProfileFleet({
      namespace: NS,
      accessConfig: {
        providers: [
          {
            name: 'token-request',
            execConfig: {
              apiVersion: 'client.authentication.k8s.io/v1',
              command: 'clusterprofile-token-request',
              provideClusterInfo: true,
              interactiveMode: 'Never',
            },
          },
        ],
      },
      hub: { kubeconfig: controlPlane.adminKubeconfig },
      clients: false,
    });
    await fleet.start();
    await fleet.settled();
  }, 60_000);
  afterAll(async () => {
    await fleet?.close();
    await issuer?.stop();
    await admin(['delete', 'namespace', NS, '--wait=false']);
  });

  it('the issuer (GET /metrics on --metrics-listen) and the fleet (fleet.metrics()) export every name', async () => {
    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.status).toBe(200);
    const issuerNames = exportedNames(await scraped.text());
    const fleetNames = exportedNames(await fleet.metrics());
    expect(issuerNames.has('clusterprofile_issuer_ready')).toBe(true);
    expect(fleetNames.has('clusterprofile_fleet_clusters')).toBe(true);

    const queried = new Set<string>();
    for (const { expr } of expressions) for (const name of promql(expr).metrics) queried.add(name);
    for (const [, dashboard] of dashboards) {
      for (const variable of dashboard.templating.list) {
        const query = typeof variable.query === 'string' ? variable.query : variable.query?.query;
        const metric = /^label_values\((\w+)/.exec(query ?? '')?.[1];
        if (metric !== undefined) queried.add(metric);
      }
    }
    expect(queried.size).toBeGreaterThan(15);
    const missing = [...queried].filter((name) => !issuerNames.has(name) && !fleetNames.has(name));
    expect(missing, 'queried by deploy/monitoring, exported by no process').toEqual([]);
  });
});
