import { describe, expect, it } from 'vitest';
import { buildExecRequest, EXEC_DEPTH_ENV } from '../../src/exec/request.js';
import type { ExecCluster, ExecConfig } from '../../src/resolve/types.js';

const exec: ExecConfig = {
  apiVersion: 'client.authentication.k8s.io/v1',
  command: '/bin/plugin',
  args: ['--a', 'b'],
  env: [
    { name: 'SHARED', value: 'from-exec' },
    { name: 'ONLY_EXEC', value: '1' },
  ],
  interactiveMode: 'Never',
};
const cluster: ExecCluster = {
  server: 'https://10.0.0.3:6443',
  'certificate-authority-data': 'Q0E=',
  'tls-server-name': 'kube',
  'proxy-url': 'http://proxy:3128',
  'disable-compression': true,
  'insecure-skip-tls-verify': false,
  config: { clusterName: 'spoke-1' },
};
const env = { SHARED: 'from-parent', PATH: '/usr/bin', UNSET: undefined };

function error(fn: () => unknown): { code: string; message: string } {
  try {
    fn();
  } catch (e) {
    return e as { code: string; message: string };
  }
  throw new Error('expected an error');
}

describe('buildExecRequest: what the plugin process gets', () => {
  it('always sets KUBERNETES_EXEC_INFO; without provideClusterInfo there is no spec.cluster', () => {
    const r = buildExecRequest(exec, cluster, { env });
    expect(JSON.parse(r.env.KUBERNETES_EXEC_INFO!)).toEqual({
      kind: 'ExecCredential',
      apiVersion: 'client.authentication.k8s.io/v1',
      spec: { interactive: false },
    });
  });

  it('with provideClusterInfo, spec.cluster carries every connection field, base64 CA data and config', () => {
    const r = buildExecRequest({ ...exec, provideClusterInfo: true }, cluster, { env });
    expect(JSON.parse(r.env.KUBERNETES_EXEC_INFO!).spec.cluster).toEqual(cluster);
  });

  it('merges exec.env over the parent env (exec wins), drops unset vars, keeps args, never mutates inputs', () => {
    const before = JSON.stringify(exec);
    const r = buildExecRequest(exec, cluster, { env });
    expect(r.env.SHARED).toBe('from-exec');
    expect(r.env.ONLY_EXEC).toBe('1');
    expect(r.env.PATH).toBe('/usr/bin');
    expect('UNSET' in r.env).toBe(false);
    expect(r.args).toEqual(['--a', 'b']);
    r.args.push('x');
    expect(JSON.stringify(exec)).toBe(before);
  });

  it('exec.env cannot override KUBERNETES_EXEC_INFO (set last, as client-go)', () => {
    const r = buildExecRequest({ ...exec, env: [{ name: 'KUBERNETES_EXEC_INFO', value: 'x' }] }, cluster, { env });
    expect(JSON.parse(r.env.KUBERNETES_EXEC_INFO!).kind).toBe('ExecCredential');
  });

  it('interactive only when the mode and the terminal allow it', () => {
    expect(buildExecRequest(exec, cluster, { env, stdinIsTerminal: true }).interactive).toBe(false);
    expect(
      buildExecRequest({ ...exec, interactiveMode: 'IfAvailable' }, cluster, { env, stdinIsTerminal: true })
        .interactive,
    ).toBe(true);
    expect(buildExecRequest({ ...exec, interactiveMode: 'IfAvailable' }, cluster, { env }).interactive).toBe(false);
    const v1beta1 = {
      ...exec,
      apiVersion: 'client.authentication.k8s.io/v1beta1' as const,
      interactiveMode: undefined,
    };
    expect(buildExecRequest(v1beta1, cluster, { env, stdinIsTerminal: true }).interactive).toBe(true);
    const e = error(() => buildExecRequest({ ...exec, interactiveMode: 'Always' }, cluster, { env }));
    expect([e.code, e.message]).toEqual([
      'ERR_EXEC_INTERACTIVE',
      'exec plugin cannot support interactive mode: standard input is not a terminal',
    ]);
  });

  it('rejects configs client-go rejects', () => {
    expect(error(() => buildExecRequest({ ...exec, interactiveMode: undefined }, cluster, { env })).message).toMatch(
      /^interactiveMode must be specified for .* to use exec authentication plugin$/,
    );
    expect(
      error(() => buildExecRequest({ ...exec, interactiveMode: 'Sometimes' as never }, cluster, { env })).message,
    ).toBe('unknown interactiveMode: "Sometimes"');
    expect(error(() => buildExecRequest({ ...exec, command: '' }, cluster, { env })).code).toBe(
      'ERR_EXEC_CONFIG_INVALID',
    );
    expect(error(() => buildExecRequest({ ...exec, apiVersion: 'v9' as never }, cluster, { env })).message).toBe(
      'exec plugin: invalid apiVersion "v9"',
    );
  });

  it('counts nesting depth in the env and refuses beyond the limit', () => {
    expect(buildExecRequest(exec, cluster, { env }).env[EXEC_DEPTH_ENV]).toBe('1');
    expect(buildExecRequest(exec, cluster, { env: { [EXEC_DEPTH_ENV]: '2' } }).env[EXEC_DEPTH_ENV]).toBe('3');
    const e = error(() => buildExecRequest(exec, cluster, { env: { [EXEC_DEPTH_ENV]: '3' } }));
    expect(e.code).toBe('ERR_EXEC_RECURSION');
    expect(e.message).toMatch(/refusing to run \/bin\/plugin: .*nested 3 deep \(limit 3\)/);
    expect(() => buildExecRequest(exec, cluster, { env: { [EXEC_DEPTH_ENV]: '1' }, maxDepth: 1 })).toThrow(/limit 1/);
  });
});
