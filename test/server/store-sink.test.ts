/** A change the data dir cannot record (a full disk) is not kept in memory either. */
import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/server/state/scheduler.js';
import { Store, type StoreSink } from '../../src/server/state/store.js';

function failingBuildSink(): StoreSink & { failing: boolean } {
  const sink = {
    failing: false,
    runner: () => undefined,
    runnerDeleted: () => undefined,
    project: () => undefined,
    pipeline: () => undefined,
    build: () => {
      if (sink.failing) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    },
  };
  return sink;
}

describe('recording build changes', () => {
  it('leaves a build pending and unassigned when its assignment cannot be recorded', () => {
    const store = new Store();
    const sink = failingBuildSink();
    store.sink = sink;
    const project = store.addProject('acme/app', '/nowhere');
    const runner = store.addRunner({ description: '', tags: [], runUntagged: true, locked: false, projectId: null, info: {} });
    const pipeline = store.addPipeline({ projectId: project.id, ref: 'main', tag: false, sha: 'a', beforeSha: 'b', variables: {}, stages: ['test'] });
    const build = store.addBuild(pipeline, { name: 'j', stage: 'test', commands: ['x'], afterScript: [], variables: [], services: [], tags: [], when: 'on_success', allowFailure: false }, 0);
    build.status = 'pending';
    sink.failing = true;
    expect(() => new Scheduler(store).pick(runner)).toThrow(/ENOSPC/);
    expect(build).toMatchObject({ status: 'pending', runnerId: null, startedAt: null });
    sink.failing = false;
    expect(new Scheduler(store).pick(runner)?.id).toBe(build.id);
  });
});
