/**
 * The container image as users run it: the Dockerfile built unchanged (on a local stand-in for its base),
 * run with real docker against the reference server on the host network.
 */
import { chmod, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skipDocker } from '../executors/docker/engine.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { waitUntil } from '../cli/helpers.js';
import { CONTAINER_LABEL, removeTestContainers, testImage, type TestImage } from './image.js';

let t: TestServer;
let image: TestImage;
let serial = 0;
const tempDirs: string[] = [];

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-image-'));
  tempDirs.push(dir);
  await chmod(dir, 0o777); // the runner in the container is not root
  return dir;
}

interface RunOptions {
  env?: Record<string, string>;
  /** Extra `docker run` options (mounts, groups). */
  docker?: string[];
}

/** `docker run --rm --network host IMAGE …args` as a real process; resolves (never rejects) when it exits. */
function container(args: string[], options: RunOptions = {}) {
  const name = `ci-runner-image-test-${process.pid}-${++serial}`;
  const env = Object.entries(options.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  const child = execa('docker', ['run', '--rm', '--name', name, '--label', CONTAINER_LABEL, '--network', 'host', ...env, ...(options.docker ?? []), image.tag, ...args], {
    reject: false,
    all: true,
    stdin: 'ignore',
  });
  return Object.assign(child, { containerName: name });
}

async function trace(jobId: number): Promise<string> {
  return (await t.server.getTrace(jobId)).toString('utf8');
}

/** Name and state letter of every process in a running container. */
async function processes(name: string): Promise<{ name: string; state: string }[]> {
  const result = await execa('docker', ['exec', name, 'bash', '-c', 'grep -h -E "^(Name|State):" /proc/[0-9]*/status 2>/dev/null; true']);
  const fields = result.stdout.split('\n').map((line) => line.split(/\s+/)[1] ?? '');
  const list: { name: string; state: string }[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) list.push({ name: fields[i]!, state: fields[i + 1]! });
  return list;
}

async function logsOf(name: string): Promise<string> {
  const result = await execa('docker', ['logs', name], { reject: false, all: true });
  return result.all ?? '';
}

// Generous: each test starts containers and a job on a shared, busy machine.
describe.skipIf(skipDocker)('the container image', { timeout: 180_000 }, () => {
  beforeAll(async () => {
    image = await testImage();
    const mb = (image.sizeBytes / 1e6).toFixed(0);
    console.log(`image ${image.tag}: ${mb} MB, ${image.buildMs ? `built in ${(image.buildMs / 1000).toFixed(0)} s` : 'cached'}`);
    t = await startTestServer({ files: { 'README.md': '# project\n', 'hello.sh': 'echo "hello from the repo"\n' } });
  }, 40 * 60_000);
  // A container a failed test left running would take the next test's job.
  afterEach(removeTestContainers);
  afterAll(async () => {
    await removeTestContainers();
    await t?.close();
    for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
  });

  it('runs as a non-root user with ci-runner as entrypoint, --help by default and /builds and /cache as volumes', async () => {
    const config = JSON.parse((await execa('docker', ['image', 'inspect', '--format', '{{json .Config}}', image.tag])).stdout) as {
      User: string;
      Entrypoint: string[];
      Cmd: string[];
      Volumes: Record<string, unknown>;
    };
    expect(config.User).toBe('ci-runner');
    expect(config.Entrypoint.at(-1)).toBe('ci-runner');
    expect(config.Cmd).toEqual(['--help']);
    expect(Object.keys(config.Volumes).sort()).toEqual(['/builds', '/cache']);
    const help = await container([]);
    expect(help.exitCode, help.all).toBe(0);
    expect(help.all).toContain('ci-runner run-once');
  });

  it('ships dist/ with production dependencies only: no compiler, test runner, sources, tests or npm cache', async () => {
    const look = await execa(
      'docker',
      ['run', '--rm', '--label', CONTAINER_LABEL, '--entrypoint', 'bash', image.tag, '-c', 'cd /opt/ci-runner && ls; ls node_modules; ls -a ~; git --version; id -u'],
      { reject: false, all: true },
    );
    expect(look.exitCode, look.all).toBe(0);
    const lines = look.stdout.split('\n');
    expect(lines).toEqual(expect.arrayContaining(['dist', 'node_modules', 'package.json', 'yargs', 'smol-toml', 'undici']));
    for (const absent of ['src', 'test', 'typescript', 'vitest', 'tsx', 'fast-check', 'playwright-core', '@types', '.npm']) expect(lines).not.toContain(absent);
    expect(look.stdout).toMatch(/git version \d/);
    expect(lines.at(-1)).not.toBe('0');
  });

  it('takes a job from CI_SERVER_URL and CI_SERVER_TOKEN alone, runs it under /builds as the non-root user and exits 0', async () => {
    const { token } = await t.registerRunner();
    const p = await t.pipeline('ok:\n  script:\n    - sh hello.sh\n    - echo "uid=$(id -u) dir=$(pwd)"\n');
    const result = await container(['run-once'], { env: { CI_SERVER_URL: t.url, CI_SERVER_TOKEN: token } });
    expect(result.exitCode, result.all).toBe(0);
    expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('success');
    const text = await trace(p.jobs[0]!.id);
    expect(text).toContain('hello from the repo');
    expect(text).toMatch(/uid=(\d+) dir=\/builds\//);
    expect(text).not.toContain('uid=0 ');
  });

  it('exits 1 when the job fails', async () => {
    const { token } = await t.registerRunner();
    const p = await t.pipeline('broken:\n  script:\n    - exit 3\n');
    const result = await container(['run-once', '--url', t.url, '--token', token]);
    expect(result.exitCode, result.all).toBe(1);
    expect(t.server.getJob(p.jobs[0]!.id)?.status).toBe('failed');
    expect(await trace(p.jobs[0]!.id)).toContain('ERROR: Job failed: exit status 3');
  });

  it('exits 4 when no job arrives within --wait-timeout', async () => {
    const { token } = await t.registerRunner({ tags: ['nothing-has-this-tag'] });
    const result = await container(['run-once', '--url', t.url, '--token', token, '--wait-timeout', '2s']);
    expect(result.exitCode, result.all).toBe(4);
    expect(result.all).toContain('No job arrived within 2s');
  });

  it('on SIGQUIT (docker kill --signal SIGQUIT) lets the running job finish, reports it and exits with its result', async () => {
    const { token } = await t.registerRunner();
    const signal = await tempDir();
    const p = await t.pipeline('drain:\n  script:\n    - echo started\n    - while [ ! -e /signal/go ]; do sleep 0.2; done\n    - echo finished after the stop\n');
    const jobId = p.jobs[0]!.id;
    const run = container(['run-once', '--url', t.url, '--token', token, '--log-level', 'info'], { docker: ['--volume', `${signal}:/signal:ro`] });
    await waitUntil(async () => (await trace(jobId)).includes('started'), 60_000, 'the job started');
    await execa('docker', ['kill', '--signal', 'SIGQUIT', run.containerName]);
    await waitUntil(async () => (await logsOf(run.containerName)).includes('Requested quit, waiting for builds to finish'), 60_000, 'the runner got SIGQUIT');
    await writeFile(join(signal, 'go'), '');
    const result = await run;
    expect(result.exitCode, result.all).toBe(0);
    expect(t.server.getJob(jobId)?.status).toBe('success');
    expect(await trace(jobId)).toContain('finished after the stop');
  });

  it('on docker stop (SIGTERM) aborts the running job at once, reports it failed and exits 1 before docker would kill it', async () => {
    const { token } = await t.registerRunner();
    const p = await t.pipeline('forever:\n  script:\n    - echo started\n    - sleep 600\n');
    const jobId = p.jobs[0]!.id;
    const run = container(['run-once', '--url', t.url, '--token', token, '--shutdown-timeout', '2s']);
    await waitUntil(async () => (await trace(jobId)).includes('started'), 60_000, 'the job started');
    const stop = execa('docker', ['stop', '--time', '120', run.containerName], { reject: false });
    const result = await run;
    await stop;
    expect(result.exitCode, result.all).toBe(1);
    expect(t.server.getJob(jobId)?.status).toBe('failed');
    expect(await trace(jobId)).toContain('aborted: the runner was stopped (SIGTERM)');
  });

  it('runs `run` with a mounted config.toml, takes jobs, and stops cleanly (exit 0) on docker stop', async () => {
    const { token } = await t.registerRunner();
    const dir = await tempDir();
    const configFile = join(dir, 'config.toml');
    await writeFile(configFile, `concurrent = 1\ncheck_interval = 1\n\n[[runners]]\n  name = "in-a-container"\n  url = "${t.url}"\n  token = "${token}"\n  executor = "shell"\n`);
    await chmod(configFile, 0o644);
    // The job leaves a process behind, in its own session: the runner kills it at the job's end, and
    // PID 1 (tini) must reap it, or every such job leaves a zombie in a long-lived container.
    const p = await t.pipeline('first:\n  script:\n    - echo "run from $(pwd)"\n    - setsid sleep 300 >/dev/null 2>&1 &\n');
    const run = container(['run'], { docker: ['--volume', `${configFile}:/etc/ci-runner/config.toml:ro`] });
    const job = await t.waitForJob(p.jobs[0]!.id, (j) => j.status === 'success' || j.status === 'failed', 120_000);
    expect(job.status).toBe('success');
    expect(await trace(job.id)).toMatch(/run from \/builds\//);
    await waitUntil(async () => !(await processes(run.containerName)).some((p) => p.name === 'sleep' && p.state !== 'Z'), 60_000, 'the leftover sleep was killed');
    expect((await processes(run.containerName)).filter((p) => p.state === 'Z')).toEqual([]);
    await execa('docker', ['stop', '--time', '120', run.containerName], { reject: false });
    const result = await run;
    expect(result.exitCode, result.all).toBe(0);
  });

  it('runs a job with the docker executor through the host socket when the builds dir has the same path inside and out', async () => {
    const socket = process.env.DOCKER_HOST?.startsWith('unix://') ? process.env.DOCKER_HOST.slice('unix://'.length) : '/var/run/docker.sock';
    const cli = await realpath((await execa('sh', ['-c', 'command -v docker'])).stdout.trim());
    const dir = await tempDir();
    const { token } = await t.registerRunner();
    const p = await t.pipeline('in-docker:\n  image: ci-runner-test/sh:1\n  script:\n    - cat README.md\n    - echo "in a job container"\n');
    const result = await container(
      ['run-once', '--url', t.url, '--token', token, '--executor', 'docker', '--docker-pull-policy', 'never', '--builds-dir', join(dir, 'builds'), '--cache-dir', join(dir, 'cache')],
      {
        docker: [
          '--volume', `${socket}:${socket}`,
          '--group-add', String((await stat(socket)).gid),
          '--volume', `${cli}:/usr/local/bin/docker:ro`,
          '--volume', `${dir}:${dir}`,
        ],
      },
    );
    expect(result.exitCode, result.all).toBe(0);
    const text = await trace(p.jobs[0]!.id);
    expect(text).toContain('# project');
    expect(text).toContain('in a job container');
  });
});
