import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadAccessConfig, parseAccessConfig } from '../../src/resolve/access-config.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cpc-access-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string; path?: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code: string; message: string; path?: string };
  }
  throw new Error('expected an error');
}

const gkeFleet = {
  providers: [
    {
      name: 'gkeFleet',
      execConfig: {
        apiVersion: 'client.authentication.k8s.io/v1beta1',
        command: 'gke-gcloud-auth-plugin',
        provideClusterInfo: true,
      },
    },
  ],
};

describe('loadAccessConfig (upstream NewFromFile)', () => {
  it('reads and parses a valid JSON file; policies stay unset', async () => {
    const config = await loadAccessConfig(await file('test-config.json', JSON.stringify(gkeFleet)));
    expect(config.providers).toHaveLength(1);
    expect(config.providers[0]!.name).toBe('gkeFleet');
    expect(config.providers[0]!.execConfig!.command).toBe('gke-gcloud-auth-plugin');
    expect(config.providers[0]!.profileSourcedCLIArgsPolicy ?? '').toBe('');
    expect(config.providers[0]!.profileSourcedEnvVarsPolicy ?? '').toBe('');
  });

  it('fails on a missing file with ERR_ACCESS_CONFIG_READ, the upstream text and the path', async () => {
    const missing = join(dir, 'non-existent.json');
    const error = await failure(loadAccessConfig(missing));
    expect(error.code).toBe('ERR_ACCESS_CONFIG_READ');
    expect(error.message).toContain('failed to read access config file');
    expect(error.message).toContain(missing);
    expect(error.path).toBe(missing);
  });

  it('fails on invalid JSON with ERR_ACCESS_CONFIG_PARSE and the upstream text', async () => {
    const error = await failure(loadAccessConfig(await file('invalid.json', 'invalid json content')));
    expect(error.code).toBe('ERR_ACCESS_CONFIG_PARSE');
    expect(error.message).toContain('failed to unmarshal access providers');
  });

  it('accepts {} as no providers', async () => {
    const config = await loadAccessConfig(await file('empty.json', '{}'));
    expect(config.providers).toEqual([]);
  });

  it('reads null as Go does: the zero value (no providers, no exec config, unset policy, empty string)', async () => {
    expect(await loadAccessConfig(await file('null.json', '{"providers": null}'))).toEqual({ providers: [] });
    const text = JSON.stringify({
      providers: [
        { name: 'p', execConfig: null, profileSourcedCLIArgsPolicy: null },
        {
          name: null,
          execConfig: {
            command: 'c',
            apiVersion: 'client.authentication.k8s.io/v1',
            args: ['a', null],
            env: [null, { name: 'N', value: null }],
            installHint: null,
          },
        },
      ],
    });
    expect(await loadAccessConfig(await file('nulls.json', text))).toEqual({
      providers: [
        { name: 'p' },
        {
          name: '',
          execConfig: {
            command: 'c',
            apiVersion: 'client.authentication.k8s.io/v1',
            args: ['a', ''],
            env: [
              { name: '', value: '' },
              { name: 'N', value: '' },
            ],
          },
        },
      ],
    });
  });

  it('fails on an empty file and on a bare list', async () => {
    expect((await failure(loadAccessConfig(await file('zero.json', '')))).code).toBe('ERR_ACCESS_CONFIG_PARSE');
    expect((await failure(loadAccessConfig(await file('list.json', '[]')))).code).toBe('ERR_ACCESS_CONFIG_PARSE');
  });

  it('reads the same document written as YAML', async () => {
    const yaml = [
      'providers:',
      '  - name: gkeFleet',
      '    execConfig:',
      '      apiVersion: client.authentication.k8s.io/v1beta1',
      '      command: gke-gcloud-auth-plugin',
      '      provideClusterInfo: true',
      '',
    ].join('\n');
    expect(await loadAccessConfig(await file('providers.yaml', yaml))).toEqual(gkeFleet);
  });

  it('rejects a document of the wrong shape with ERR_ACCESS_CONFIG_INVALID and the JSON path', async () => {
    const error = await failure(
      loadAccessConfig(
        await file(
          'bad.json',
          JSON.stringify({
            providers: [{ name: 'p', execConfig: { apiVersion: 'client.authentication.k8s.io/v1', command: 7 } }],
          }),
        ),
      ),
    );
    expect(error.code).toBe('ERR_ACCESS_CONFIG_INVALID');
    expect(error.path).toBe('$.providers[0].execConfig.command');
    const list = await failure(loadAccessConfig(await file('bad2.json', '{"providers": {"name": "p"}}')));
    expect(list).toMatchObject({ code: 'ERR_ACCESS_CONFIG_INVALID', path: '$.providers' });
  });

  it('reads through an injected file system', async () => {
    const reads: string[] = [];
    const fs = {
      async readFile(path: string) {
        reads.push(path);
        return JSON.stringify(gkeFleet);
      },
    };
    expect(await loadAccessConfig('/virtual/providers.json', { fs })).toEqual(gkeFleet);
    expect(reads).toEqual(['/virtual/providers.json']);
  });
});

describe('parseAccessConfig', () => {
  it('parses bytes a caller already holds and names the source in errors', () => {
    expect(parseAccessConfig(JSON.stringify(gkeFleet), 'configmap fleet/providers')).toEqual(gkeFleet);
    try {
      parseAccessConfig('{"providers": [', 'configmap fleet/providers');
      expect.unreachable();
    } catch (error) {
      expect(error).toMatchObject({ code: 'ERR_ACCESS_CONFIG_PARSE' });
      expect((error as Error).message).toContain('configmap fleet/providers');
    }
  });

  it('returns a new object each time', () => {
    const text = JSON.stringify(gkeFleet);
    const a = parseAccessConfig(text, 'x');
    const b = parseAccessConfig(text, 'x');
    expect(a).toEqual(b);
    expect(a).not.toBe(b);
    expect(a.providers[0]).not.toBe(b.providers[0]);
  });
});

describe('access config parse errors and secrets', () => {
  it('a JSON syntax error does not quote the file (exec env values may be client secrets)', async () => {
    const secret = 's3cr3t-Value-XYZ';
    const path = await file(
      'providers.json',
      `{"providers":[{"name":"x","execConfig":{"apiVersion":"client.authentication.k8s.io/v1","command":"p","env":[{"name":"CLIENT_SECRET","value":${secret}`,
    );
    const error = await failure(loadAccessConfig(path));
    expect(error.code).toBe('ERR_ACCESS_CONFIG_PARSE');
    expect(error.message).toContain('failed to unmarshal access providers');
    // V8 quotes ~10 characters after an unexpected token: the start of the secret.
    expect(error.message).not.toContain(secret.slice(0, 6));
    expect(String((error as { cause?: Error }).cause?.message ?? '')).not.toContain(secret.slice(0, 6));
  });
});
