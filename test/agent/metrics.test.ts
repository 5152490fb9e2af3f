import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parseListenAddress } from '../../src/agent/config/listen-address.js';
import { exportedMetric, GITLAB_RUNNER_METRICS, OWN_METRICS, RENAMED_METRICS } from '../../src/agent/metrics/names.js';
import { jobUrl } from '../../src/agent/metrics/running-jobs.js';
import { formatGoDuration as goDuration } from '../../src/util/duration.js';
import { shortToken } from '../../src/util/short-token.js';
import { entryReadiness } from '../../src/agent/readiness.js';

describe('listen_address', () => {
  it('reads host:port, :port (every interface) and [ipv6]:port', () => {
    expect(parseListenAddress('127.0.0.1:9252')).toEqual({ host: '127.0.0.1', port: 9252 });
    expect(parseListenAddress(':9252')).toEqual({ host: undefined, port: 9252 });
    expect(parseListenAddress('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListenAddress('metrics.local:80')).toEqual({ host: 'metrics.local', port: 80 });
  });

  it('refuses what is not host:port', () => {
    for (const bad of ['9252', 'host', 'host:', 'host:70000', 'http://host:1', '::1:80', 'a b:1']) expect(parseListenAddress(bad), bad).toBeUndefined();
  });
});

describe('GitLab Runner formats', () => {
  it('shortens tokens as GitLab Runner labels them (prefixes stripped, 9 characters)', () => {
    expect(shortToken('glrt-t1_abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('glrt-abcdefghijklmnop')).toBe('abcdefghi');
    expect(shortToken('t2_abcdefghijk')).toBe('abcdefghi');
    expect(shortToken('GR1348941abcdefghijk')).toBe('abcdefghi');
    expect(shortToken('plain-token-1234')).toBe('plain-tok');
    expect(shortToken('short')).toBe('short');
  });

  it('prints durations as Go does, and job URLs without credentials or .git', () => {
    expect(goDuration(0)).toBe('0s');
    expect(goDuration(150)).toBe('150ms');
    expect(goDuration(4250)).toBe('4.25s');
    expect(goDuration(62_500)).toBe('1m2.5s');
    expect(goDuration(3_723_000)).toBe('1h2m3s');
    expect(jobUrl({ id: 7, repo_url: 'https://gitlab-ci-token:secret@gitlab.example.com/group/project.git' })).toBe('https://gitlab.example.com/group/project/-/jobs/7');
  });

  it('names every exported series from the table, and refuses a name that is not exported', () => {
    const names = new Set<string>();
    for (const entry of [...GITLAB_RUNNER_METRICS, ...OWN_METRICS]) {
      expect(names.has(entry.name), entry.name).toBe(false);
      names.add(entry.name);
      expect(entry.name).toMatch(/^(gitlab_runner|ci_runner)_[a-z0-9_]+$/);
    }
    expect(exportedMetric('gitlab_runner_jobs').labels).toEqual(['runner', 'runner_name', 'system_id', 'state', 'stage', 'executor_stage']);
    expect(() => exportedMetric('gitlab_runner_worker_slots_number')).toThrow(/not an exported metric/);
    for (const replaced of Object.keys(RENAMED_METRICS)) expect(names.has(replaced), replaced).toBe(false);
  });

  it('lists every metric of the table, exported or not, in docs/operations.md', async () => {
    const doc = await readFile(new URL('../../docs/operations.md', import.meta.url), 'utf8');
    for (const entry of [...GITLAB_RUNNER_METRICS, ...OWN_METRICS]) expect(doc, entry.name).toContain(`| \`${entry.name}\` | ${entry.type} |`);
    for (const replaced of Object.keys(RENAMED_METRICS)) expect(doc, replaced).toContain(`| \`${replaced}\` |`);
  });
});

describe('readiness of an entry', () => {
  const base = { name: 'r', executorOk: true, executorReason: undefined, lastStatus: 204, failures: 0 };
  it('is ready once its executor works and a job request was answered', () => {
    expect(entryReadiness(base)).toEqual({ runner: 'r', ready: true });
  });

  it('says why it is not', () => {
    expect(entryReadiness({ ...base, executorOk: undefined }).reason).toMatch(/checking whether its executor works/);
    expect(entryReadiness({ ...base, executorOk: false, executorReason: 'the docker CLI "docker" was not found' }).reason).toMatch(/executor cannot run jobs: the docker CLI/);
    expect(entryReadiness({ ...base, lastStatus: undefined }).reason).toMatch(/no answer to its first job request/);
    expect(entryReadiness({ ...base, lastStatus: 403, failures: 2 }).reason).toMatch(/refused its token \(403\).*2 in a row/);
    expect(entryReadiness({ ...base, lastStatus: -1, failures: 1 }).reason).toMatch(/does not answer/);
    expect(entryReadiness({ ...base, lastStatus: 502, failures: 1 }).reason).toMatch(/status 502/);
  });
});
