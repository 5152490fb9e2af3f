/**
 * exec's own calls to the in-process server's admin API (playing a manual job, fetching a job's
 * artifacts), for answers the reference server does not give on demand: a refusal, a 5xx, a body cut
 * off halfway. nock intercepts them at the HTTP layer (fetch); no server runs.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import nock from 'nock';
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { keepJobFiles, type KeepSource } from '../../src/exec/keep.js';
import { PlayError, playJob } from '../../src/exec/wait.js';

const url = 'http://exec.invalid:8080';
const adminToken = 'admin-secret';

/** A stand-in for the server's job records: job 1 has artifacts `a.tar.gz`, job 2 `b.tar.gz`. */
function source(): KeepSource {
  const jobs = new Map([
    [1, { name: 'build', artifacts: { filename: 'a.tar.gz' } }],
    [2, { name: 'test', artifacts: { filename: 'b.tar.gz' } }],
  ]);
  return {
    url,
    adminToken,
    getJob: ((id: number) => jobs.get(id)) as unknown as KeepSource['getJob'],
    getTrace: (async (id: number) => Buffer.from(`log of ${id}\n`)) as KeepSource['getTrace'],
    reportFile: () => undefined,
  };
}

beforeAll(() => nock.disableNetConnect());
afterAll(() => nock.enableNetConnect());
afterEach(() => {
  nock.cleanAll();
});

describe('playing a manual job', () => {
  const never = new AbortController().signal;

  it('sends the admin token and returns when the server plays the job', async () => {
    const scope = nock(url, { reqheaders: { 'private-token': adminToken } }).post('/admin/api/jobs/7/play').reply(200, {});
    await playJob({ url, adminToken }, 7, 'deploy', never);
    expect(scope.isDone()).toBe(true);
  });

  it('names the job, the status and the server\'s words when it refuses', async () => {
    nock(url).post('/admin/api/jobs/7/play').reply(500, 'database is locked');
    const error = await playJob({ url, adminToken }, 7, 'deploy', never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlayError);
    expect((error as Error).message).toBe('playing manual job deploy (#7) failed: HTTP 500 database is locked');
  });

  it('says the server cannot play manual jobs when the route is missing', async () => {
    nock(url).post('/admin/api/jobs/7/play').reply(404, 'not found');
    await expect(playJob({ url, adminToken }, 7, 'deploy', never)).rejects.toThrow('(this version of the reference server cannot play manual jobs)');
  });
});

describe('keeping the jobs\' artifacts', () => {
  let dir: string;
  const never = new AbortController().signal;

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps the other jobs\' files and says why when one archive cannot be fetched', async () => {
    dir = await mkdtemp(join(tmpdir(), 'exec-keep-'));
    nock(url).get('/admin/api/jobs/1/artifacts').reply(503, 'busy');
    nock(url).get('/admin/api/jobs/2/artifacts').reply(200, 'archive bytes');
    const kept = await keepJobFiles(source(), [1, 2], dir, never);
    expect(kept.map((job) => [job.name, job.artifacts !== undefined, job.artifactsError])).toEqual([
      ['build', false, 'could not fetch the artifacts of job 1: HTTP 503'],
      ['test', true, undefined],
    ]);
    expect(await readdir(join(dir, 'logs'))).toEqual(['1-build.log', '2-test.log']);
  });

  it('leaves no partial archive behind when the body is cut off halfway', async () => {
    dir = await mkdtemp(join(tmpdir(), 'exec-keep-'));
    const cut = new Readable({
      read() {
        this.push(Buffer.alloc(64 * 1024, 1));
        this.destroy(new Error('socket hang up'));
      },
    });
    nock(url).get('/admin/api/jobs/1/artifacts').reply(200, () => cut);
    nock(url).get('/admin/api/jobs/2/artifacts').reply(200, 'archive bytes');
    const kept = await keepJobFiles(source(), [1, 2], dir, never);
    expect(kept[0]?.artifacts).toBeUndefined();
    expect(kept[0]?.artifactsError).toMatch(/^could not fetch the artifacts of job 1: /);
    expect(await readdir(join(dir, 'artifacts', '1-build'))).toEqual([]);
    expect(kept[1]?.artifacts).toBe(join(dir, 'artifacts', '2-test', 'b.tar.gz'));
  });
});
