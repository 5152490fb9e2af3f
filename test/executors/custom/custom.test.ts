/**
 * The custom executor against real driver scripts (drivers.ts) and the reference server over
 * /api/v4: GitLab Runner 19's driver protocol end to end — config_exec's JSON, prepare_exec, one
 * run_exec per stage with its name, cleanup_exec; the environment of each call; exit codes; the
 * helper commands the stage scripts call for the cache and artifacts; and the bad input a driver can
 * give (no JSON, a missing or non-executable program, a program that never exits).
 */
import { execa } from 'execa';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { defaultServices } from '../../../src/agent/services.js';
import { silentLogger } from '../../../src/log/index.js';
import { workDirs } from '../../cli/helpers.js';
import { runOnce } from '../../helpers/run-once.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { customTable, writeDrivers, type Drivers, type DriverScripts } from './drivers.js';

let t: TestServer;
let token: string;

beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# custom\n', 'src/input.txt': 'from the repository\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t?.close();
});

interface Run {
  drivers: Drivers;
  root: string;
  status: string;
  trace: string;
  failure?: string;
}

/** Runs every job of `yaml`'s pipeline, in order, with the custom executor and `scripts`. */
async function runPipeline(yaml: string, scripts: DriverScripts = {}, custom: Record<string, unknown> = {}, runner: Record<string, unknown> = {}): Promise<Run[]> {
  const d = await workDirs();
  const drivers = await writeDrivers(d.root, scripts);
  const p = await t.pipeline(yaml);
  const config = runnerSchema.parse({ name: 'custom', url: t.url, token, api: 'v4', executor: 'custom', builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, custom: customTable(drivers, custom), ...runner });
  const never = new AbortController().signal;
  const runs: Run[] = [];
  for (const planned of p.jobs) {
    await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
    const job = await t.waitForJob(planned.id, (j) => j.status === 'success' || j.status === 'failed');
    const trace = (await t.server.getTrace(planned.id)).toString('utf8');
    runs.push({ drivers, root: d.root, status: job.status, trace, ...(job.failure_reason ? { failure: job.failure_reason } : {}) });
  }
  return runs;
}

const plain = (text: string): string => text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');

describe('custom executor: a job end to end', () => {
  let runs: Run[];
  beforeAll(async () => {
    runs = await runPipeline(`
stages: [build, test]
variables: { MY_VAR: "job value", PATH_TRAP: "/nowhere" }
build:
  stage: build
  cache: { key: k1, paths: [cached/] }
  script:
    - echo "script sees MY_VAR=$MY_VAR in $PWD"
    - mkdir -p cached out && echo cache-content > cached/c.txt && echo artifact-content > out/a.txt
  after_script:
    - echo "after_script ran with status $CI_JOB_STATUS"
  artifacts: { paths: [out/] }
test:
  stage: test
  cache: { key: k1, paths: [cached/], policy: pull }
  script:
    - cat out/a.txt cached/c.txt
`);
  }, 180_000);

  it('runs config, prepare, a run_exec per stage in GitLab Runner\'s order and names, and cleanup', async () => {
    const [build, test] = runs;
    expect(build?.status, build?.trace).toBe('success');
    expect(test?.status, test?.trace).toBe('success');
    const stages = (await build!.drivers.read('stages')).trim().split('\n');
    expect(stages, stages.join(' ')).toEqual([
      'prepare_script', 'get_sources', 'restore_cache', 'build_script', 'after_script', 'archive_cache', 'upload_artifacts_on_success',
      // the second job: its cache and the first job's artifacts come first
      'prepare_script', 'get_sources', 'restore_cache', 'download_artifacts', 'build_script',
    ]);
    expect(await build!.drivers.read('cleanup-done')).toBe('cleaned\n');
  });

  it('prints the driver line, config_exec\'s stderr, prepare_exec\'s output and every script line once', () => {
    const trace = plain(runs[0]!.trace);
    expect(trace).toContain('Using Custom executor with driver test driver v1.2.3...');
    expect(trace).toContain('config_exec says hello');
    expect(trace).toMatch(/prepare_exec: JOB_RESPONSE_FILE has id "id":\d+/);
    expect(trace).toMatch(/Running on \S+ via test-host\.\.\./);
    expect(trace.match(/script sees MY_VAR=job value in .*driver-builds/g)).toHaveLength(1);
    expect(trace).toContain('after_script ran with status success');
    expect(trace).toContain('Uploading artifacts...');
    expect(trace).toContain('Created cache');
    const second = plain(runs[1]!.trace);
    expect(second).toContain('Successfully extracted cache');
    expect(second).toContain('artifact-content');
    expect(second).toContain('cache-content');
  });

  it('gives every call the runner\'s environment, CUSTOM_ENV_ job variables, job_env and the driver variables, in its TMPDIR', async () => {
    const { drivers } = runs[0]!;
    for (const name of ['config', 'prepare', 'run', 'cleanup']) {
      const env = await drivers.read(`env-${name}`);
      expect(env, name).toContain('CUSTOM_ENV_MY_VAR=job value');
      expect(env, name).toContain('BUILD_FAILURE_EXIT_CODE=1');
      expect(env, name).toContain('SYSTEM_FAILURE_EXIT_CODE=2');
      expect(env, name).toMatch(/^JOB_RESPONSE_FILE=.*custom-executor.*\/response\.json$/m);
      expect(env, name).toMatch(/^BUILD_EXIT_CODE_FILE=.*\/build_exit_code$/m);
      expect(env, name).not.toMatch(/^MY_VAR=/m);
      expect(env, name).not.toMatch(/^PATH_TRAP=/m);
      const tmp = /^TMPDIR=(.*)$/m.exec(env)?.[1];
      expect(env, name).toContain(`pwd=${tmp}`);
      expect(env, name).toContain(`HOME=${process.env.HOME ?? ''}`);
      if (name !== 'config') expect(env, name).toContain('DRIVER_SECRET=from-config');
    }
    expect(await drivers.read('env-config')).toContain('args=config-arg');
    expect(await drivers.read('env-prepare')).toContain('args=prepare-arg');
    expect(await drivers.read('env-run')).toMatch(/args=run-arg \S+\/script\S*\/script build_script/);
    expect(await drivers.read('env-cleanup')).toContain('args=cleanup-arg');
    // The job's temporary dir is gone afterwards.
    const tmp = /^TMPDIR=(.*)$/m.exec(await drivers.read('env-run'))?.[1] ?? '';
    await expect(stat(tmp)).rejects.toThrow();
  });

  it('keeps the checkout, the cache and the helper\'s archives on the driver\'s side', async () => {
    const { root } = runs[0]!;
    expect((await readdir(join(root, 'driver-builds'))).length).toBeGreaterThan(0);
    const cacheFiles = await execa('find', [join(root, 'driver-cache'), '-name', 'cache.zip']);
    expect(cacheFiles.stdout).toMatch(/\/k1\/cache\.zip$/);
  });
});

describe('custom executor: exit codes', () => {
  it('a script failure is the job\'s, with the exit code the driver wrote to BUILD_EXIT_CODE_FILE', async () => {
    const [run] = await runPipeline('j:\n  script:\n    - exit 42\n');
    expect(run?.status).toBe('failed');
    expect(run?.failure).toBe('script_failure');
    expect(plain(run!.trace)).toContain('ERROR: Job failed: exit status 42');
  }, 120_000);

  it('SYSTEM_FAILURE_EXIT_CODE and any other code are the runner\'s failure', async () => {
    const [system] = await runPipeline('j:\n  script:\n    - "true"\n', { run: 'exit "$SYSTEM_FAILURE_EXIT_CODE"' });
    expect(system?.status).toBe('failed');
    expect(system?.failure).toBe('runner_system_failure');
    expect(plain(system!.trace)).toContain('exit status 2 (the driver reported a system failure)');
    const [other] = await runPipeline('j:\n  script:\n    - "true"\n', { run: 'exit 7' });
    expect(other?.failure).toBe('runner_system_failure');
    expect(plain(other!.trace)).toContain('unknown Custom executor executable exit code 7');
    expect(await other!.drivers.read('cleanup-done')).toBe('cleaned\n');
  }, 120_000);
});

describe('custom executor: bad drivers', () => {
  it('config_exec printing something that is not JSON fails the job with the reason, after GitLab Runner\'s three tries', async () => {
    const [run] = await runPipeline('j:\n  script:\n    - "true"\n', { config: 'echo "this is not json"' });
    expect(run?.status).toBe('failed');
    const trace = plain(run!.trace);
    expect(trace).toContain('error while parsing JSON output of config_exec');
    expect(trace.match(/Preparation failed/g)).toHaveLength(2);
    expect(await run!.drivers.read('cleanup-done')).toBe('cleaned\n');
  }, 120_000);

  it('config_exec printing nothing changes nothing (the runner\'s builds_dir), as in GitLab Runner', async () => {
    const [run] = await runPipeline('j:\n  script:\n    - pwd\n', { config: 'true' });
    expect(run?.status, run?.trace).toBe('success');
    expect(plain(run!.trace)).toContain('Using Custom executor...');
    expect(plain(run!.trace)).toContain(`${run!.root}/builds/`);
  }, 120_000);

  it('a missing or non-executable driver fails the job with the reason', async () => {
    const [missing] = await runPipeline('j:\n  script:\n    - "true"\n', {}, { prepare_exec: '/nonexistent/driver' });
    expect(missing?.status).toBe('failed');
    expect(plain(missing!.trace)).toContain('failed to start command: prepare_exec "/nonexistent/driver": no such file');
    const d = await workDirs();
    const drivers = await writeDrivers(d.root);
    await execa('chmod', ['-x', drivers.run]);
    const [plainFile] = await runPipeline('j:\n  script:\n    - "true"\n', {}, { run_exec: drivers.run });
    expect(plainFile?.status).toBe('failed');
    expect(plain(plainFile!.trace)).toContain('permission denied');
  }, 120_000);

  it('no run_exec is a configuration error', async () => {
    const [run] = await runPipeline('j:\n  script:\n    - "true"\n', {}, { run_exec: '' });
    expect(run?.failure).toBe('runner_configuration_error');
    expect(plain(run!.trace)).toContain('custom executor is missing RunExec');
  }, 60_000);

  it('a driver that never exits is stopped at the job timeout: SIGTERM to its group, SIGKILL after graceful_kill_timeout, nothing left', async () => {
    const marker = `ci-runner-custom-hang-${process.pid}-${Date.now()}`;
    // The driver ignores SIGTERM, and so does a child it leaves in its group.
    const run = `trap '' TERM; if [ "$stage" = build_script ]; then (trap '' TERM; exec -a ${marker} sleep 1000) & exec -a ${marker}-driver sleep 1000; fi; bash "$script"`;
    const [job] = await runPipeline('j:\n  timeout: 3s\n  script:\n    - "true"\n', { run }, { graceful_kill_timeout: 1, force_kill_timeout: 2 });
    expect(job?.status).toBe('failed');
    expect(job?.failure).toBe('job_execution_timeout');
    expect(plain(job!.trace)).toMatch(/did not stop within 1 s of SIGTERM; it was killed \(SIGKILL\)/);
    const ps = await execa('ps', ['-eo', 'args'], { reject: false });
    expect(ps.stdout).not.toContain(marker);
  }, 120_000);
});

describe('custom executor: GET_SOURCES_ATTEMPTS, RESTORE_CACHE_ATTEMPTS, ARTIFACT_DOWNLOAD_ATTEMPTS', () => {
  it('calls run_exec again for a failed get_sources, restore_cache or download_artifacts, up to the attempts the job sets', async () => {
    // Every job but `build` fails the first call of each of the three stages.
    const run = `
echo "$CUSTOM_ENV_CI_JOB_NAME $stage" >> "$RECORD/stages"
count="$RECORD/count-$CUSTOM_ENV_CI_JOB_NAME-$stage"; echo x >> "$count"
case "$stage" in get_sources|restore_cache|download_artifacts)
  if [ "$CUSTOM_ENV_CI_JOB_NAME" != build ] && [ "$(wc -l < "$count")" -eq 1 ]; then echo "flaky $stage"; echo 1 > "$BUILD_EXIT_CODE_FILE"; exit "$BUILD_FAILURE_EXIT_CODE"; fi;;
esac
bash "$script" || { echo "$?" > "$BUILD_EXIT_CODE_FILE"; exit "$BUILD_FAILURE_EXIT_CODE"; }`;
    const [build, retried, once] = await runPipeline(
      `
stages: [build, test]
build:
  stage: build
  cache: { key: k1, paths: [cached/] }
  script: [mkdir -p cached out, echo c > cached/c.txt, echo a > out/a.txt]
  artifacts: { paths: [out/] }
retried:
  stage: test
  variables: { GET_SOURCES_ATTEMPTS: "2", RESTORE_CACHE_ATTEMPTS: "2", ARTIFACT_DOWNLOAD_ATTEMPTS: "2" }
  cache: { key: k1, paths: [cached/], policy: pull }
  script: [cat out/a.txt cached/c.txt]
once:
  stage: test
  cache: { key: k1, paths: [cached/], policy: pull }
  script: [cat out/a.txt]
`,
      { run },
    );
    expect(build?.status, build?.trace).toBe('success');
    expect(retried?.status, retried?.trace).toBe('success');
    const stages = (await retried!.drivers.read('stages')).trim().split('\n').filter((line) => line.startsWith('retried '));
    expect(stages.map((line) => line.slice('retried '.length))).toEqual([
      'prepare_script', 'get_sources', 'get_sources', 'restore_cache', 'restore_cache', 'download_artifacts', 'download_artifacts', 'build_script',
    ]);
    expect(plain(retried!.trace)).toContain('WARNING: restoring the cache failed (attempt 1 of 2); retrying...');
    expect(plain(retried!.trace)).toContain('WARNING: downloading artifacts failed (attempt 1 of 2); retrying...');
    // Without the variables, one attempt: the first failure is the job's.
    expect(once?.status).toBe('failed');
    const onceStages = (await once!.drivers.read('stages')).trim().split('\n').filter((line) => line.startsWith('once '));
    expect(onceStages.slice(0, 2)).toEqual(['once prepare_script', 'once get_sources']);
    expect(onceStages).not.toContain('once restore_cache');
  }, 180_000);
});
