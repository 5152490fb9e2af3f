/**
 * A job's stages, log sections, line stamps, feature flags, steps and script controls as GitLab
 * Runner 19 has them, run by the shell executor against the reference server (API v4).
 */
import { describe, expect, it } from 'vitest';
import { runnerSchema } from '../../src/agent/config/schema.js';
import { defaultServices } from '../../src/agent/services.js';
import { STAGES } from '../../src/executors/common/stages.js';
import { silentLogger } from '../../src/log/index.js';
import { logText, sectionNames, sectionsOpenAt } from '../helpers/log-text.js';
import { runOnce } from '../helpers/run-once.js';
import { startPayloadProxy } from '../helpers/payload-proxy.js';
import { useTestServer, type TestServer } from '../helpers/server.js';
import { workDirs } from '../cli/helpers.js';

let t: TestServer;
let token: string;
useTestServer(
  (server, runnerToken) => {
    t = server;
    token = runnerToken;
  },
  { files: { 'README.md': '# p\n' } },
);

const STAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z 0[01]O[ +]/;

interface Ran {
  status: string | undefined;
  reason: string | undefined;
  raw: string;
  log: string;
}

/** Queues `yaml`, runs its jobs one by one; each job's status, failure reason, raw log and the log as GitLab shows it. */
async function runPipeline(yaml: string, runner: Record<string, unknown> = {}): Promise<Record<string, Ran>> {
  const d = await workDirs();
  const p = await t.pipeline(yaml);
  const config = runnerSchema.parse({ name: 'stages', url: t.url, token, builds_dir: d.builds, cache_dir: d.cache, trace_update_interval: 0.2, ...runner });
  const never = new AbortController().signal;
  for (let i = 0; i < p.jobs.length; i += 1) {
    await runOnce({ runner: config, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
  }
  const out: Record<string, Ran> = {};
  for (const { id, name } of p.jobs) {
    const raw = (await t.server.getTrace(id)).toString('utf8');
    const job = t.server.getJob(id);
    out[name] = { status: job?.status, reason: job?.failure_reason, raw, log: logText(raw) };
  }
  return out;
}

async function runJob(yaml: string, runner: Record<string, unknown> = {}): Promise<Ran> {
  const jobs = await runPipeline(yaml, runner);
  return Object.values(jobs)[0]!;
}

describe('stages and log sections', () => {
  it('runs the stages in GitLab Runner\'s order, each in its section with its heading', async () => {
    const jobs = await runPipeline(
      'make:\n  stage: build\n  script: [mkdir -p out, echo made > out/f]\n  artifacts:\n    paths: [out/]\n' +
        'use:\n  stage: test\n  cache:\n    key: k\n    paths: [c/]\n  script: [mkdir -p c, cat out/f]\n  after_script: [echo after]\n  artifacts:\n    paths: [c/]\n',
    );
    const use = jobs.use!;
    expect(use.status, use.log).toBe('success');
    const expected = STAGES.map((stage) => stage.name)
      .filter((name) => !['resolve_secrets', 'clear_worktree', 'archive_cache_on_failure', 'upload_artifacts_on_failure'].includes(name))
      .map((name) => (name === 'step_*' ? 'step_script' : name));
    expect(sectionNames(use.raw)).toEqual(expected);
    for (const heading of ['Preparing the "shell" executor', 'Preparing environment', 'Getting source from Git repository', 'Restoring cache', 'Downloading artifacts', 'Executing "step_script" stage of the job script', 'Running after_script', 'Saving cache for successful job', 'Uploading artifacts for successful job', 'Cleaning up project directory and file based variables']) {
      expect(use.log).toContain(`\u001b[0K\u001b[36;1m${heading}\u001b[0;m`);
    }
    // Each section ends before the next opens, and the job's line comes after the last.
    expect(sectionsOpenAt(use.raw, 'made')?.map((s) => s.name)).toEqual(['step-script']);
    expect(sectionsOpenAt(use.raw, 'Job succeeded')).toEqual([]);
  });

  it('closes the sections a job leaves open, so its own collapsed section cannot hide the runner\'s error', async () => {
    const { status, raw } = await runJob("j:\n  script:\n    - printf 'section_start:1:Hide_It[collapsed=true]\\r\\033[0Khidden\\n'\n    - exit 3\n");
    expect(status).toBe('failed');
    // Without the runner closing it, GitLab's page would fold the error into the job's collapsed section.
    expect(sectionsOpenAt(raw, 'hidden\n')?.map((s) => s.name)).toEqual(['step-script', 'hide-it']);
    expect(sectionsOpenAt(raw, 'ERROR: Job failed: exit status 3')).toEqual([]);
  });

  it('stamps every line as GitLab Runner 19 does: the runner\'s own as stream 00, the job\'s as 01', async () => {
    const { status, raw } = await runJob('j:\n  script:\n    - echo one\n    - printf "no newline"\n');
    expect(status).toBe('success');
    const lines = raw.split('\n').filter((line) => line !== '');
    for (const line of lines) expect(line).toMatch(STAMP);
    expect(raw).toMatch(/Z 01O one\n/);
    expect(raw).toMatch(/Z 00O[ +]\u001b\[32;1mJob succeeded/);
    expect(raw).toMatch(/Z 01O no newline\n/);
  });

  it('writes no stamps with FF_TIMESTAMPS false, from the job or from [runners.feature_flags], and names the flag in the header', async () => {
    const byJob = await runJob('j:\n  variables:\n    FF_TIMESTAMPS: "false"\n  script: [echo "flag=$FF_TIMESTAMPS"]\n');
    expect(byJob.raw).not.toMatch(STAMP);
    expect(byJob.raw).toContain('\nflag=false\n');
    expect(byJob.raw).toContain('  feature flags: FF_TIMESTAMPS:false\n');
    const byConfig = await runJob('j:\n  variables:\n    FF_TIMESTAMPS: "true"\n  script: [echo "flag=$FF_TIMESTAMPS"]\n', { feature_flags: { FF_TIMESTAMPS: false } });
    expect(byConfig.raw).not.toMatch(STAMP);
    expect(byConfig.raw).toContain('\nflag=false\n');
  });

  it('gives every feature flag to the job, resolved, and warns about one set that ci-runner does not honour', async () => {
    const { log } = await runJob('j:\n  variables:\n    FF_USE_FASTZIP: "true"\n    FF_NETWORK_PER_BUILD: "maybe"\n  script:\n    - echo "flags=$FF_USE_FASTZIP,$FF_SCRIPT_SECTIONS,$FF_USE_DIRECT_DOWNLOAD"\n');
    expect(log, log).toContain('flags=true,false,true');
    expect(log).toContain('WARNING: FF_USE_FASTZIP=true is not honoured: ci-runner makes and reads archives with its own archivers');
    expect(log).toContain('WARNING: FF_NETWORK_PER_BUILD: could not parse feature flag, expected bool, got maybe');
  });

  it('shows a multi-line command as GitLab Runner does, and as a collapsed section of its own with FF_SCRIPT_SECTIONS', async () => {
    const yaml = (flag: string) => `j:\n  variables:\n    FF_SCRIPT_SECTIONS: "${flag}"\n  script:\n    - |\n      echo first\n      echo second\n`;
    const plain = await runJob(yaml('false'));
    expect(plain.log).toContain('$ echo first # collapsed multi-line command');
    const folded = await runJob(yaml('true'));
    expect(folded.log).toMatch(/section_start:\d+:section_script_step_0\[hide_duration=true,collapsed=true\]\r\u001b\[0K\u001b\[32;1m\$ echo first\necho second/);
    expect(sectionsOpenAt(folded.raw, 'second\n')?.map((s) => s.name)).toEqual(['step-script']);
  });
});

describe('steps', () => {
  it('runs a release: job\'s release step after its script, the release\'s $VARIABLES expanded by the runner', async () => {
    const { status, reason, log } = await runJob(
      'r:\n  variables:\n    PATH: "$CI_PROJECT_DIR/bin:/usr/local/bin:/usr/bin:/bin"\n  script:\n' +
        "    - mkdir -p bin && echo 'echo release-cli-args \"$@\"' > bin/release-cli && chmod +x bin/release-cli\n" +
        '  release:\n    tag_name: v1.$CI_PIPELINE_IID\n    name: Release $CI_COMMIT_SHORT_SHA\n    description: notes\n',
    );
    expect(status, `${reason ?? ''} ${log}`).toBe('success');
    expect(log).toContain('Executing "step_release" stage of the job script');
    expect(log).toContain('Warning: release-cli will not be supported after 20.0');
    expect(log).toMatch(/release-cli-args create --name Release [0-9a-f]{8} --description notes --tag-name v1\.\d+\n/);
  });

  it('fails a job with run: (CI steps, as GitLab sends them) before anything runs, naming them', async () => {
    // The reference server runs a run: job's script steps as its script; GitLab sends the steps as `run`.
    const proxy = await startPayloadProxy(t.url);
    proxy.rewrite = (payload) => JSON.stringify({ ...payload, run: JSON.stringify([{ name: 'hello', script: 'echo hi' }]) });
    try {
      const { status, reason, log } = await runJob('s:\n  script: [echo never]\n', { url: proxy.url });
      expect(status).toBe('failed');
      expect(reason).toBe('runner_configuration_error');
      expect(log).toContain('ERROR: Job failed: this job uses `run:` (CI steps');
      expect(log).not.toContain('Getting source');
    } finally {
      await proxy.close();
    }
  });
});

describe('script controls', () => {
  it('stops the steps at RUNNER_SCRIPT_TIMEOUT, runs after_script as timedout, and fails the job as a timeout', async () => {
    const { status, reason, log } = await runJob('j:\n  variables:\n    RUNNER_SCRIPT_TIMEOUT: 2s\n  script: [sleep 60]\n  after_script: [echo "after=$CI_JOB_STATUS"]\n');
    expect(status).toBe('failed');
    expect(reason).toBe('job_execution_timeout');
    expect(log).toContain('WARNING: step_script could not run to completion because the timeout was exceeded. For more control over job and script timeouts see: https://docs.gitlab.com/ci/runners/configure_runners/#set-script-and-after_script-timeouts');
    expect(log).toContain('after=timedout');
    expect(log).toContain('ERROR: Job failed: script timeout: context deadline exceeded');
  });

  it('stops after_script at RUNNER_AFTER_SCRIPT_TIMEOUT and goes on unaffected; warns about a value it cannot use', async () => {
    const { status, log } = await runJob('j:\n  variables:\n    RUNNER_AFTER_SCRIPT_TIMEOUT: 1s\n    RUNNER_SCRIPT_TIMEOUT: soon\n  script: [echo ok]\n  after_script: [sleep 60]\n');
    expect(status, log).toBe('success');
    expect(log).toContain('WARNING: Ignoring malformed RUNNER_SCRIPT_TIMEOUT timeout: soon');
    expect(log).toContain('WARNING: after_script could not run to completion because the timeout was exceeded.');
    expect(log).toContain('WARNING: after_script failed, but job will continue unaffected:');
  });

  it('fails the job when after_script fails and AFTER_SCRIPT_IGNORE_ERRORS is false', async () => {
    const { status, reason, log } = await runJob('j:\n  variables:\n    AFTER_SCRIPT_IGNORE_ERRORS: "false"\n  script: [echo ok]\n  after_script: [exit 3]\n');
    expect(status).toBe('failed');
    expect(reason).toBe('script_failure');
    expect(log).toContain('ERROR: Job failed: exit status 3');
    const ignored = await runJob('j:\n  script: [echo ok]\n  after_script: [exit 3]\n');
    expect(ignored.status).toBe('success');
    expect(ignored.log).toContain('WARNING: after_script failed, but job will continue unaffected: exit status 3');
  });

  it('warns, as GitLab Runner does, about EXECUTOR_JOB_SECTION_ATTEMPTS out of range', async () => {
    const { log } = await runJob('j:\n  variables:\n    EXECUTOR_JOB_SECTION_ATTEMPTS: "20"\n  script: [echo ok]\n');
    expect(log).toContain('WARNING: EXECUTOR_JOB_SECTION_ATTEMPTS: number of attempts out of the range [1, 10], clamping to: 10');
  });
});
