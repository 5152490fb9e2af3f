/** dotenv reports, coverage, artifacts exclude, cache policy and key files, interruptible, end to end (see pipeline-runtime-rig.ts). */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { git } from '../helpers/git.js';
import { waitUntil } from './helpers.js';
import { useRuntimeRig } from './pipeline-runtime-rig.js';

const rig = useRuntimeRig();
const { runOnce, pipeline, jobNamed, trace, drain } = rig;

describe('reports, coverage, exclude, cache', () => {
  it('gives a dotenv report\'s variables to the jobs that take its artifacts', async () => {
    const p = await rig.t.pipeline(`
stages: [build, test]
version:
  stage: build
  script: ['printf "BUILD_VERSION=1.2.3\\n# a comment\\nBUILD_CHANNEL=\\"beta\\"\\n" > build.env']
  artifacts: { reports: { dotenv: build.env } }
use:
  stage: test
  script: ['echo "version=$BUILD_VERSION channel=$BUILD_CHANNEL"', test "$BUILD_VERSION" = 1.2.3, test ! -e build.env]
kept:
  stage: build
  script: [echo A=1 > a.env, echo other > other.txt]
  artifacts: { paths: [a.env, other.txt], reports: { dotenv: a.env } }
sees:
  stage: test
  needs: [kept]
  script: [test -f a.env, test "$A" = 1]
none:
  stage: test
  dependencies: []
  script: ['test -z "$BUILD_VERSION"']
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => `${j.name}:${j.status}`)).toEqual(['version:success', 'use:success', 'kept:success', 'sees:success', 'none:success']);
    expect(jobNamed(p, 'version').dotenv_variables).toEqual(['BUILD_VERSION', 'BUILD_CHANNEL']);
    // The report alone made the archive: as GitLab, later jobs get its variables, not the file.
    expect(jobNamed(p, 'version').artifacts).toBeNull();
    expect(await trace(jobNamed(p, 'use').id)).toContain('version=1.2.3 channel=beta');
  }, 60_000);

  it('stores the coverage the job\'s regex finds in its trace, and leaves excluded files out of artifacts', async () => {
    const p = await rig.t.pipeline(`
stages: [build, test]
measure:
  stage: build
  coverage: '/Lines: +(\\d+\\.\\d+)%/'
  script: ['echo "Lines:  12.0%"', 'echo "Lines:  87.5%"', mkdir -p out/logs, echo keep > out/a.txt, echo drop > out/logs/b.log, echo drop > out/c.tmp]
  artifacts: { paths: [out/], exclude: ['out/logs', '**/*.tmp'] }
check:
  stage: test
  script: [test -f out/a.txt, test ! -e out/logs/b.log, test ! -e out/c.tmp]
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => j.status)).toEqual(['success', 'success']);
    expect(jobNamed(p, 'measure').coverage).toBe(87.5);
    expect(await trace(jobNamed(p, 'measure').id)).toContain('Excluded 2 file(s) matching artifacts:exclude');
  }, 60_000);

  it('restores only with policy pull, saves only with push', async () => {
    const key = `policy-${Date.now()}`;
    const cache = (policy: string) => `{ key: ${key}, paths: [vendor/], policy: ${policy} }`;
    const p = await rig.t.pipeline(`
stages: [seed, read, check]
seed: { stage: seed, cache: ${cache('push')}, script: [test ! -e vendor/dep.txt, mkdir -p vendor, echo seeded > vendor/dep.txt] }
read: { stage: read, cache: ${cache('pull')}, script: [test "$(cat vendor/dep.txt)" = seeded, echo changed > vendor/dep.txt] }
check: { stage: check, cache: ${cache('pull-push')}, script: [test "$(cat vendor/dep.txt)" = seeded] }
`);
    await drain(p);
    expect(pipeline(p.id).jobs.map((j) => j.status)).toEqual(['success', 'success', 'success']);
    expect(await trace(jobNamed(p, 'seed').id)).toContain(`Not downloading cache ${key} due to policy`);
    expect(await trace(jobNamed(p, 'read').id)).toContain(`Not uploading cache ${key} due to policy`);
    // A push job never restores, even with a cache there.
    const again = await rig.t.pipeline(`seed: { cache: ${cache('push')}, script: [test ! -e vendor/dep.txt, mkdir -p vendor, echo x > vendor/dep.txt] }\n`);
    await drain(again);
    expect(jobNamed(again, 'seed').status).toBe('success');
  }, 90_000);

  it('keys a cache on the content of files at the commit, with a prefix', async () => {
    const config = 'deps: { cache: { key: { files: [deps.lock], prefix: deps }, paths: [vendor/] }, script: [mkdir -p vendor, date > vendor/x] }\n';
    const keyOf = async (): Promise<string> => {
      const p = await rig.t.pipeline(config);
      await drain(p);
      const match = /Creating cache (deps-[0-9a-f]{40})\.\.\./.exec(await trace(jobNamed(p, 'deps').id));
      expect(match, await trace(jobNamed(p, 'deps').id)).not.toBeNull();
      return match![1]!;
    };
    const first = await keyOf();
    await writeFile(join(rig.t.projectPath, 'other.txt'), 'unrelated\n');
    await git(rig.t.projectPath, ['add', '-A']);
    await git(rig.t.projectPath, ['commit', '-q', '-m', 'unrelated change']);
    expect(await keyOf()).toBe(first);
    await writeFile(join(rig.t.projectPath, 'deps.lock'), 'left-pad 1.1\n');
    await git(rig.t.projectPath, ['commit', '-q', '-am', 'bump deps']);
    expect(await keyOf()).not.toBe(first);
  }, 90_000);
});

describe('interruptible', () => {
  it('cancels an older pipeline of the ref whose running jobs are interruptible, and not one with a started job that is not', async () => {
    const p1 = await rig.t.pipeline('lint: { interruptible: true, script: [echo lint started, sleep 30] }\n');
    const running = runOnce();
    await waitUntil(() => jobNamed(p1, 'lint').status === 'running', 30_000, 'lint running');
    // GitLab cancels older pipelines of the ref at another commit only.
    const newCommit = async (): Promise<void> => {
      await git(rig.t.projectPath, ['commit', '-q', '--allow-empty', '-m', 'next']);
    };
    await newCommit();
    const p2 = await rig.t.pipeline('deploy: { script: [echo deploying, sleep 4] }\nlint: { interruptible: true, script: [echo lint] }\n');
    // Canceled at once, or first `canceling` for a runner that stops it gracefully (v4).
    expect(['canceling', 'canceled']).toContain(jobNamed(p1, 'lint').status);
    const stopped = await running;
    expect(stopped.exitCode, stopped.all).toBe(1);
    expect(jobNamed(p1, 'lint').status).toBe('canceled');
    // p2's deploy (not interruptible) starts; a newer pipeline then leaves p2 alone.
    const deploying = runOnce();
    await waitUntil(() => jobNamed(p2, 'deploy').status === 'running', 30_000, 'deploy running');
    await newCommit();
    const p3 = await rig.t.pipeline('lint: { interruptible: true, script: [echo lint] }\n');
    expect(jobNamed(p2, 'lint').status).toBe('pending');
    expect((await deploying).exitCode).toBe(0);
    expect(jobNamed(p2, 'deploy').status).toBe('success');
    await drain(p2);
    await drain(p3);
  }, 90_000);
});
