import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { KeyEntry, KeyTable } from '../../src/agent/config/keys.js';
import { EXECUTORS } from '../../src/agent/config/runner-schema.js';
import { GLOBAL_KEYS } from '../../src/agent/config/schema.js';
import { configFailure, configHead, firstRunner } from './config-text.js';

/** GitLab Runner 19.3's keys per table path ("" = top level), generated once from its config structs. */
const fixture = JSON.parse(await readFile(new URL('../fixtures/gitlab-runner-19.3-config-keys.json', import.meta.url), 'utf8')) as {
  tables: Record<string, Record<string, 'value' | 'map' | 'table' | 'array of tables'>>;
};

/** Every key table under the top level, by its dotted path (arrays of tables without an index). */
function allTables(table: KeyTable = GLOBAL_KEYS, path = '', into = new Map<string, KeyTable>()): Map<string, KeyTable> {
  into.set(path, table);
  for (const [name, entry] of Object.entries(table.keys)) {
    if (entry.table) allTables(entry.table, path === '' ? name : `${path}.${name}`, into);
  }
  return into;
}

function allEntries(): Array<{ path: string; name: string; entry: KeyEntry; table: KeyTable }> {
  return [...allTables()].flatMap(([path, table]) => Object.entries(table.keys).map(([name, entry]) => ({ path, name, entry, table })));
}

const label = (path: string, name: string): string => (path === '' ? name : `${path}.${name}`);

describe('the config key tables', () => {
  it('give every key of GitLab Runner 19.3, in every table, an entry at its path', () => {
    const tables = allTables();
    const missing: string[] = [];
    for (const [path, keys] of Object.entries(fixture.tables)) {
      for (const [name, kind] of Object.entries(keys)) {
        const entry = tables.get(path)?.keys[name];
        if (!entry) missing.push(label(path, name));
        else if ((kind === 'table' || kind === 'array of tables') !== (entry.table !== undefined)) missing.push(`${label(path, name)} (a ${kind})`);
      }
    }
    expect(missing).toEqual([]);
    expect(Object.values(fixture.tables).reduce((n, keys) => n + Object.keys(keys).length, 0)).toBeGreaterThan(700);
  });

  it('name no GitLab Runner key that 19.3 does not have, unless marked as ours or an older version\'s', () => {
    const wrong = allEntries()
      .filter(({ path, name, entry }) => (fixture.tables[path]?.[name] !== undefined) === (entry.origin !== undefined))
      .map(({ path, name, entry }) => `${label(path, name)} (${entry.origin ?? 'GitLab Runner 19'})`);
    expect(wrong).toEqual([]);
  });

  it('have every honoured key read by the schema of its table, and an entry for every key a schema reads', () => {
    const notRead: string[] = [];
    const noEntry: string[] = [];
    for (const [path, table] of allTables()) {
      const shape = table.schema?.shape ?? {};
      for (const [name, entry] of Object.entries(table.keys)) if (entry.support.status === 'honoured' && !Object.hasOwn(shape, name)) notRead.push(label(path, name));
      for (const name of Object.keys(shape)) if (!table.keys[name]) noEntry.push(label(path, name));
    }
    expect(notRead).toEqual([]);
    expect(noEntry).toEqual([]);
  });

  it('refuse no key: only the executors ci-runner does not have are refused, each with a reason', () => {
    expect(allEntries().filter(({ entry }) => entry.support.status === 'refused').map(({ path, name }) => label(path, name))).toEqual([]);
    const refused = Object.entries(EXECUTORS).filter(([, support]) => support.status === 'refused');
    expect(refused.map(([name]) => name).sort()).toEqual(['docker+machine', 'docker-autoscaler', 'docker-windows', 'instance', 'parallels', 'ssh', 'virtualbox']);
    expect(Object.entries(EXECUTORS).filter(([, support]) => support.status === 'honoured').map(([name]) => name)).toEqual(['shell', 'docker', 'kubernetes', 'custom']);
  });

  it('give every warned key a reason', () => {
    expect(allEntries().filter(({ entry }) => entry.support.status === 'warned' && !/\w{3}/.test(entry.support.reason)).map(({ path, name }) => label(path, name))).toEqual([]);
  });
});

describe('loading keys by their table', () => {
  it('refuses an executor ci-runner does not have, naming it and why', () => {
    expect(configFailure(configHead('ssh'))).toContain('c.toml:7: `runners.executor`: "ssh" is refused: ci-runner does not have GitLab Runner\'s ssh executor; ci-runner\'s executors are shell, docker, kubernetes');
    expect(configFailure(configHead('docker+machine'))).toContain('"docker+machine" is refused: ci-runner does not have GitLab Runner\'s docker+machine executor');
    expect(configFailure(configHead('docker-windows'))).toContain('"docker-windows" is refused: ci-runner runs Linux containers only');
    expect(configFailure(configHead('ssh'))).toContain('"ssh" is refused: ci-runner does not have GitLab Runner\'s ssh executor');
    expect(configFailure(configHead('dockr'))).toContain("c.toml:7: `runners.executor`: not an executor of GitLab Runner 19 that ci-runner has; ci-runner's executors are shell, docker, kubernetes");
  });

  it('loads an empty table of an executor it does not have quietly, and warns about a set one', () => {
    expect(firstRunner(`${configHead('shell')}  [runners.ssh]\n  [runners.machine]\n    IdleCount = 0\n`).warnings).toEqual([]);
    const { warnings } = firstRunner(`${configHead('shell')}  [runners.ssh]\n    host = "build.example.com"\n    user = "ci"\n`);
    expect(warnings).toEqual(["c.toml:8: `ssh` is ignored: read by GitLab Runner's ssh, parallels and virtualbox executors only; ci-runner has none of them"]);
  });

  it('warns about a docker or kubernetes table beside another executor, which nothing reads', () => {
    const { warnings } = firstRunner(`${configHead('shell')}  [runners.docker]\n    image = "alpine"\n  [runners.kubernetes]\n    privileged = false\n`);
    expect(warnings).toEqual(['c.toml:8: [runners.docker] is ignored: this runner\'s executor is "shell"']);
  });

  it('reads [runners.cache] into the distributed cache, and warns about the S3 role keys it does not use', () => {
    const { runner, warnings } = firstRunner(`${configHead('shell')}  [runners.cache]\n    Type = "s3"\n    [runners.cache.s3]\n      BucketName = "ci"\n      RoleARN = "arn:aws:iam::1:role/cache"\n`);
    expect(runner.cache).toMatchObject({ Type: 's3', Shared: false, s3: { BucketName: 'ci', AuthenticationType: '' } });
    expect(warnings).toEqual(['c.toml:12: `RoleARN` in [runners.cache.s3] is ignored: ci-runner does not assume an AWS role for the cache: its URLs are signed with the [runners.cache.s3] keys or the machine\'s IAM identity']);
    expect(configFailure(`${configHead('shell')}  [runners.cache]\n    Type = "ftp"\n`)).toMatch(/c\.toml:9: `runners\.cache\.Type`: "s3", "azure" or "gcs"/);
  });

  it('reads [runners.feature_flags] as flag names to true or false', () => {
    const { runner } = firstRunner(`${configHead('shell')}  [runners.feature_flags]\n    FF_USE_FASTZIP = true\n    FF_SCRIPT_SECTIONS = false\n`);
    expect(runner.feature_flags).toEqual({ FF_USE_FASTZIP: true, FF_SCRIPT_SECTIONS: false });
    expect(firstRunner(configHead('shell')).runner.feature_flags).toEqual({});
    expect(configFailure(`${configHead('shell')}  [runners.feature_flags]\n    FF_USE_FASTZIP = "yes"\n`)).toMatch(/c\.toml:9: `runners\.feature_flags\.FF_USE_FASTZIP`: expected boolean/);
  });

  it('names a misspelt key deep in a table with its line and the nearest key', () => {
    const text = `${configHead('kubernetes')}  [[runners.kubernetes.volumes.host_path]]\n    name = "x"\n    mount_path = "/x"\n    mount_propogation = "None"\n`;
    expect(configFailure(text)).toMatch(/c\.toml:11: unknown key `mount_propogation` in \[runners\.kubernetes\.volumes\.host_path\] \(did you mean `mount_propagation`\?\)/);
  });

  it('warns about a GitLab Runner key a deep table does not read, with its line', () => {
    const text = `${configHead('kubernetes')}  [[runners.kubernetes.volumes.host_path]]\n    name = "x"\n    mount_path = "/x"\n    mount_propagation = "HostToContainer"\n`;
    expect(firstRunner(text).warnings).toEqual(["c.toml:11: `mount_propagation` in [runners.kubernetes.volumes.host_path] is ignored: ci-runner's kubernetes executor does not apply it yet"]);
  });

  it('keeps the runner id GitLab Runner\'s register writes', () => {
    expect(firstRunner(configHead('shell').replace('executor', 'id = 42\n  executor')).runner.id).toBe(42);
  });
});
