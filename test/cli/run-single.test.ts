import { logText } from '../helpers/log-text.js';
import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RUN_ONCE_FLAGS } from '../../src/cli/commands/run-once-options.js';
import { envNames } from '../../src/cli/env-options.js';
import { useTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
let token: string;

useTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

async function trace(jobId: number): Promise<string> {
  return logText(await t.server.getTrace(jobId));
}

/** Two jobs that finish only when both run at once (each waits up to 60 s for the other's file). */
function barrierJob(me: string, other: string): string {
  return `  stage: first
  script:
    - touch "$SHARED/${me}"
    - i=0; while [ ! -e "$SHARED/${other}" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -e "$SHARED/${other}"
    - echo "bash=\${BASH_VERSION:-none} name-var=$FROM_ENV"
    - head -c 9000 /dev/zero | tr '\\0' 'x'; echo
`;
}

describe('run-single, started with the environment only', () => {
  it('honours every RUNNER_* / CI_SERVER_* name run-once reads', async () => {
    const { builds, cache } = await workDirs();
    const shared = await mkdtemp(join(tmpdir(), 'ci-runner-barrier-'));
    const p = await t.pipeline(`stages: [first, second]
a:
${barrierJob('a', 'b')}  cache:
    key: k
    paths: [cached.txt]
  artifacts:
    paths: [cached.txt]
b:
${barrierJob('b', 'a')}
later:
  stage: second
  script: [echo later]
`.replace('  script:\n    - touch "$SHARED/a"', '  script:\n    - echo cached > cached.txt\n    - touch "$SHARED/a"'));
    const [a, b, later] = p.jobs;
    const env: Record<string, string> = {
      CI_SERVER_URL: t.url,
      RUNNER_TOKEN: token,
      RUNNER_NAME: 'env-runner',
      RUNNER_EXECUTOR: 'shell',
      RUNNER_SHELL: 'sh',
      RUNNER_BUILDS_DIR: builds,
      RUNNER_CACHE_DIR: cache,
      RUNNER_MAX_BUILDS: '2',
      RUNNER_LIMIT: '2',
      RUNNER_REQUEST_CONCURRENCY: '2',
      RUNNER_WAIT_TIMEOUT: '120s',
      RUNNER_POLL_INTERVAL: '200ms',
      RUNNER_SHUTDOWN_TIMEOUT: '10s',
      RUNNER_OUTPUT_LIMIT: '4',
      RUNNER_ENV: `SHARED=${shared}\nFROM_ENV=yes, really`,
      RUNNER_PRE_CLONE_SCRIPT: 'echo pre-clone-ran',
      RUNNER_PRE_BUILD_SCRIPT: 'echo pre-build-ran',
      RUNNER_POST_BUILD_SCRIPT: 'echo post-build-ran',
      RUNNER_ARTIFACTS_FORMAT: 'zip',
      RUNNER_ARTIFACTS_EXTRACT_LIMIT: '1GiB',
      RUNNER_SHOW_LOG: 'true',
      RUNNER_API: 'auto',
    };
    // Every name the flag table reads is set here or in a test below.
    expect([...Object.keys(env), 'CI_SERVER_TOKEN', 'CONFIG_FILE', 'RUNNER_CONFIG_NAME'].sort()).toEqual(envNames(RUN_ONCE_FLAGS).sort());
    const help = await cli(['run-single', '--help']);
    for (const name of envNames(RUN_ONCE_FLAGS)) expect(help.stdout).toContain(name);

    const result = await cli(['run-single'], { env });
    expect(result.exitCode, result.all).toBe(0);
    for (const job of [a!, b!]) {
      expect(t.server.getJob(job.id)?.status).toBe('success');
      const text = await trace(job.id);
      // GitLab Runner's header: the name, then the 9-character short token.
      // No config file: a system id for the process, as GitLab Runner's run-single makes.
      expect(text).toMatch(new RegExp(`  on env-runner ${token.replace(/^glrt-/, '').slice(0, 9)}, system ID: [sr]_[0-9a-zA-Z]{12}\\n`));
      expect(text).toContain('pre-clone-ran');
      expect(text).toContain('pre-build-ran');
      expect(text).toContain('bash=none name-var=yes, really');
      // A 4 KiB output limit (the runner's stamped lines and sections take the first one or two) cut the 9000 x's, and with them the post-build script's line.
      expect(text).toMatch(/Job's log exceeded limit of 4096 bytes/);
      // The job's page as the server names it (CI_JOB_URL over v4), else GitLab's <project>/-/jobs/<id>.
      expect(result.stderr).toMatch(new RegExp(`Job ${job.id} \\(${job.name}\\) received; its log: ${t.url.replace(/\/$/, '')}/(${t.projectName}/-/)?jobs/${job.id}\\n`));
    }
    // --max-builds 2: the later stage's job is left for another runner.
    expect(t.server.getJob(later!.id)?.status).toBe('pending');
    t.server.cancelJob(later!.id);
    expect(t.server.getJob(a!.id)?.artifacts?.filename).toMatch(/\.zip$/);
    expect((await readdir(builds)).length).toBeGreaterThan(0);
    expect((await readdir(cache)).length).toBeGreaterThan(0);
    // --show-log: the job's log (with the post-build script's output past the limit) on standard output.
    expect(result.stdout).toContain('post-build-ran');
    expect(result.stdout).toContain('pre-build-ran');
    expect(result.stderr).toContain('2 jobs: 2 succeeded, 0 failed');
  });

  it('takes the token from CI_SERVER_TOKEN and refuses unusable environment values, naming them', async () => {
    const d = await workDirs();
    const base = { CI_SERVER_URL: t.url, CI_SERVER_TOKEN: token, RUNNER_WAIT_TIMEOUT: '1s', RUNNER_BUILDS_DIR: d.builds, RUNNER_CACHE_DIR: d.cache };
    const none = await cli(['run-once'], { env: base });
    expect(none.exitCode, none.all).toBe(4);
    const refused = await cli(['run-once'], { env: { ...base, CI_SERVER_TOKEN: 'not-a-runner-token' } });
    expect(refused.exitCode, refused.all).toBe(3);
    for (const [name, value, says] of [
      ['RUNNER_EXECUTOR', 'ssh', 'RUNNER_EXECUTOR="ssh"'],
      ['RUNNER_MAX_BUILDS', 'many', 'RUNNER_MAX_BUILDS="many"'],
      ['RUNNER_SHOW_LOG', 'sometimes', 'RUNNER_SHOW_LOG="sometimes"'],
      ['RUNNER_POLL_INTERVAL', 'often', 'RUNNER_POLL_INTERVAL: "often" is not a duration'],
      ['RUNNER_SHUTDOWN_TIMEOUT', 'later', 'RUNNER_SHUTDOWN_TIMEOUT: "later" is not a duration'],
      ['RUNNER_ARTIFACTS_EXTRACT_LIMIT', 'lots', 'RUNNER_ARTIFACTS_EXTRACT_LIMIT: expected a size'],
      ['RUNNER_ENV', 'no-equals-sign', 'RUNNER_ENV: a "NAME=value" string'],
    ] as const) {
      const result = await cli(['run-once'], { env: { ...base, [name]: value } });
      expect(result.exitCode, `${name}: ${result.all}`).toBe(2);
      expect(result.stderr).toContain(says);
    }
  });

  it('keeps taking jobs by default until none arrives for --wait-timeout after the last one', async () => {
    const d = await workDirs();
    const p = await t.pipeline('stages: [one, two]\nfirst:\n  stage: one\n  script: [echo first]\nsecond:\n  stage: two\n  script: [echo second]\n');
    const result = await cli(['run-single', '-u', t.url, '-t', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '5', '--poll-interval', '200ms']);
    expect(result.exitCode, result.all).toBe(0);
    for (const job of p.jobs) expect(t.server.getJob(job.id)?.status).toBe('success');
    expect(result.stderr).toContain('2 jobs: 2 succeeded, 0 failed');
  });

  it('runs as a runner of config.toml with -c and -r, as GitLab Runner\'s run-single does (or CONFIG_FILE and RUNNER_CONFIG_NAME)', async () => {
    const { root, builds, cache } = await workDirs();
    const config = join(root, 'config.toml');
    await writeFile(config, `[[runners]]\n  name = "other"\n  url = "${t.url}"\n  token = "nope"\n[[runners]]\n  name = "from-config"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${builds}"\n  cache_dir = "${cache}"\n  pre_build_script = "echo config-pre-build"\n`);
    const p = await t.pipeline('one:\n  script: [echo one]\n');
    const result = await cli(['run-single', '-c', config, '-r', 'from-config', '--max-builds', '1']);
    expect(result.exitCode, result.all).toBe(0);
    const text = await trace(p.jobs[0]!.id);
    // The config file's system id (.runner_system_id beside it).
    const kept = (await readFile(join(root, '.runner_system_id'), 'utf8')).trim();
    expect(text).toContain(`  on from-config ${token.replace(/^glrt-/, '').slice(0, 9)}, system ID: ${kept}\n`);
    expect(text).toContain('config-pre-build');
    const missing = await cli(['run-single', '--max-builds', '1'], { env: { CONFIG_FILE: config, RUNNER_CONFIG_NAME: 'absent' } });
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain(`no runner named "absent" in ${config} (it has "other", "from-config")`);
  });

  it('run-once still takes one job and leaves the next for later', async () => {
    const d = await workDirs();
    const p = await t.pipeline('one:\n  script: [echo one]\ntwo:\n  script: [echo two]\n');
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', '--show-log']);
    expect(result.exitCode, result.all).toBe(0);
    const statuses = p.jobs.map((j) => t.server.getJob(j.id)?.status).sort();
    expect(statuses).toEqual(['pending', 'success']);
    for (const job of p.jobs) if (t.server.getJob(job.id)?.status === 'pending') t.server.cancelJob(job.id);
    expect(result.stdout).toMatch(/\$ echo (one|two)/);
  });

  it('shows a job\'s log masked, as the coordinator gets it', async () => {
    const d = await workDirs();
    await t.pipeline('secret:\n  script: [echo "the secret is $HIDDEN"]\n', { HIDDEN: 's3cr3t-value' });
    const result = await cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--wait-timeout', '20s', '--show-log']);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout, result.stdout).toContain('the secret is [MASKED]');
    expect(result.all).not.toContain('s3cr3t-value');
  });
});
