/**
 * Shared set-up for the end-to-end tests of the pipeline engine's runtime: the reference server with a
 * real git project, real runners (`run-once`, and `run` where jobs must run side by side), jobs'
 * start and end times as the server recorded them.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, expect } from 'vitest';
import type { JobView, PipelineView } from '../../src/server/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

export interface RuntimeRig {
  t: TestServer;
  token: string;
  dirs: { root: string; builds: string; cache: string };
  /** One job through a real `run-once`, sharing one builds and cache dir across the file. */
  runOnce(wait?: string): ReturnType<typeof cli>;
  admin(method: string, path: string): Promise<{ status: number; body: unknown }>;
  pipeline(id: number): PipelineView;
  jobNamed(p: PipelineView, name: string): JobView;
  trace(id: number): Promise<string>;
  /** Runs jobs with run-once until the pipeline has none pending; returns how many ran. */
  drain(p: PipelineView): Promise<number>;
}

export const time = (iso: string | null | undefined): number => new Date(iso ?? NaN).getTime();

/** Starts the server and registers a runner before the file's tests; stops them after. */
export function useRuntimeRig(): RuntimeRig {
  const rig = {} as RuntimeRig;
  beforeAll(async () => {
    rig.t = await startTestServer({ files: { 'README.md': '# project\n', 'deps.lock': 'left-pad 1.0\n' } });
    ({ token: rig.token } = await rig.t.registerRunner());
    rig.dirs = await workDirs();
  });
  afterAll(async () => {
    await rig.t.close();
    await rm(rig.dirs.root, { recursive: true, force: true });
  });
  rig.runOnce = (wait = '20s') =>
    cli(['run-once', '--url', rig.t.url, '--token', rig.token, '--builds-dir', rig.dirs.builds, '--cache-dir', rig.dirs.cache, '--wait-timeout', wait]);
  rig.admin = async (method, path) => {
    const response = await fetch(`${rig.t.url}/admin/api${path}`, { method, headers: { 'private-token': rig.t.server.adminToken } });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text };
  };
  rig.pipeline = (id) => rig.t.server.getPipeline(id)!;
  rig.jobNamed = (p, name) => rig.t.server.getJob(rig.pipeline(p.id).jobs.find((job) => job.name === name)!.id)!;
  rig.trace = async (id) => (await rig.t.server.getTrace(id)).toString('utf8');
  rig.drain = async (p) => {
    let ran = 0;
    while (rig.pipeline(p.id).jobs.some((job) => job.status === 'pending')) {
      const result = await rig.runOnce();
      expect([0, 1], result.all).toContain(result.exitCode);
      ran += 1;
    }
    return ran;
  };
  return rig;
}
