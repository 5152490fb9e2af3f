/**
 * What a v4 job says about its docker containers and sources, on a real engine: the job's get_sources
 * hooks run in a container of its image (never on the host, where the runner's git runs as the
 * daemon), the runner's own scripts on the host; the image's `docker: user`; a service's own
 * variables, several aliases, `docker: user`, HEALTHCHECK_TCP_PORT; git options refused on the host.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { docker, IMAGES, jobLabels, labelled, skipDocker } from './engine.js';
import { runDockerJob, startDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
let scratch: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'ci-runner-docker-opts-'));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe.skipIf(skipDocker)('docker: what the job asks of its containers', () => {
  it('runs the job\'s hooks in its own container and the runner\'s scripts on the host', async () => {
    const jobMarker = join(scratch, 'job-hook-ran');
    const yaml = `j:\n  hooks:\n    pre_get_sources_script:\n      - mkdir -p ${scratch} && touch ${jobMarker} && echo "job-hook as $(id -u) in $(pwd)"\n  script:\n    - echo built\n`;
    const run = await runDockerJob(t, token, yaml, { runner: { pre_get_sources_script: `touch ${join(scratch, 'runner-pre-ran')}`, post_get_sources_script: 'echo "runner-post readme=$(cat README.md)"' } });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('job-hook as 0 in /builds');
    expect(run.trace.indexOf('job-hook as')).toBeLessThan(run.trace.indexOf('Fetching changes'));
    expect(run.trace).toContain('runner-post readme=# p');
    // The job's hook never touched the host; the runner's script did.
    expect(existsSync(jobMarker)).toBe(false);
    expect(existsSync(join(scratch, 'runner-pre-ran'))).toBe(true);
  });

  it('refuses a job\'s git option that would run a program with the host\'s git; nothing runs', async () => {
    const marker = join(scratch, 'upload-pack-ran');
    const run = await runDockerJob(t, token, 'j:\n  script:\n    - echo never\n', { variables: { GIT_FETCH_EXTRA_FLAGS: `--upload-pack=touch ${marker}` } });
    expect(run.status).toBe('failed');
    expect(run.trace).toContain('GIT_FETCH_EXTRA_FLAGS: the runner\'s git does not take "--upload-pack=touch"');
    expect(existsSync(marker)).toBe(false);
  });

  it('runs the build as the image\'s docker: user', async () => {
    const run = await runDockerJob(t, token, `j:\n  image:\n    name: ${IMAGES.sh}\n    docker:\n      user: "1000"\n  script:\n    - echo "uid=$(id -u) image=$CI_JOB_IMAGE disposable=$CI_DISPOSABLE_ENVIRONMENT shared=$CI_SHARED_ENVIRONMENT dir=$CI_PROJECT_DIR"\n    - cat README.md\n`);
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain(`uid=1000 image=${IMAGES.sh} disposable=true shared= dir=/builds/group/project`);
    expect(run.trace).toContain('the job\'s image docker: user "1000"');
  });

  it('gives a service its own variables, every alias and its docker: user', async () => {
    const yaml = [
      'j:',
      '  services:',
      `    - name: ${IMAGES.httpd}`,
      '      alias: one,two',
      '      variables:',
      '        SVC_OWN: "for-$CI_JOB_NAME"',
      '      docker:',
      '        user: "0:0"',
      '  script:',
      '    - wget -q -O - http://one/',
      '    - wget -q -O - http://two/',
      '    - sleep 2',
      '',
    ].join('\n');
    const job = await startDockerJob(t, token, yaml);
    let inspected: { Env: string[]; User: string } | undefined;
    await waitUntil(async () => {
      const names = (await labelled(...jobLabels(token, job.id))).containers.filter((n) => n.includes('-service-'));
      if (names.length === 0) return false;
      inspected = JSON.parse(await docker(['inspect', '--format', '{{json .Config}}', names[0]!])) as { Env: string[]; User: string };
      return true;
    }, 60_000, 'a service container');
    const { status, trace } = await job.done;
    expect(status, trace).toBe('success');
    expect(trace.match(/hello from the service/g)).toHaveLength(2);
    expect(inspected?.Env).toContain('SVC_OWN=for-j');
    expect(inspected?.User).toBe('0:0');
  });

  it('waits for the port HEALTHCHECK_TCP_PORT names instead of every exposed one', async () => {
    const yaml = `j:\n  services:\n    - name: ${IMAGES.nolisten}\n      variables:\n        HEALTHCHECK_TCP_PORT: "6000"\n  script:\n    - echo built\n`;
    const run = await runDockerJob(t, token, yaml, { docker: { wait_for_services_timeout: 1 } });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toMatch(/nothing accepted a connection on [\d.]+:6000 within 1 seconds/);
    expect(run.trace).not.toContain(':5432');
  });

  it('logs the image pull in with DOCKER_AUTH_CONFIG, and never prints it', async () => {
    // A CLI that keeps the docker config each pull was given, then hands over to the real one.
    const dir = await mkdtemp(join(scratch, 'cli-'));
    const realDocker = (await execa('sh', ['-c', 'command -v docker'])).stdout.trim();
    const cli = join(dir, 'docker');
    await writeFile(cli, `#!/bin/sh\nif [ "$1" = pull ]; then cat "$DOCKER_CONFIG/config.json" > ${join(dir, 'pull-config.json')}; fi\nexec ${realDocker} "$@"\n`);
    await chmod(cli, 0o755);
    const login = { auths: { '127.0.0.1:1': { username: 'puller', password: 'pull-secret-xyz' } } };
    const run = await runDockerJob(t, token, 'j:\n  image: 127.0.0.1:1/ci-runner-test/sh:1\n  script:\n    - echo built\n', {
      docker: { cli, pull_policy: ['always', 'if-not-present'] },
      variables: { DOCKER_AUTH_CONFIG: JSON.stringify(login) },
    });
    expect(run.status, run.trace).toBe('success');
    expect(run.trace).toContain('Authenticating with credentials from $DOCKER_AUTH_CONFIG for 127.0.0.1:1');
    const used = JSON.parse(await readFile(join(dir, 'pull-config.json'), 'utf8')) as { auths: Record<string, { auth: string }> };
    expect(used.auths['127.0.0.1:1']).toEqual({ auth: Buffer.from('puller:pull-secret-xyz').toString('base64') });
    expect(run.trace).not.toContain('pull-secret-xyz');
    expect(run.trace).not.toContain(Buffer.from('puller:pull-secret-xyz').toString('base64'));
  });
});
