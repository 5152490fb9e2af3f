/**
 * The image's ENTRYPOINT, as GitLab Runner treats it: it runs around the job's shell (a wrapper
 * ending in `exec "$@"` sets things up first), `image: { entrypoint: [...] }` replaces it, and an
 * entrypoint that never starts the shell fails the job saying so instead of passing without running
 * the script. The runner's own containers (ownership hand-over) never run it.
 */
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { IMAGES, jobLabels, labelled, skipDocker } from './engine.js';
import { runDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

describe.skipIf(skipDocker)('docker executor: the image ENTRYPOINT', () => {
  it('runs an entrypoint wrapper around the script and after_script', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  image: ${IMAGES.entry}\n  script:\n    - echo "script sees FROM_ENTRYPOINT=$FROM_ENTRYPOINT"\n  after_script:\n    - echo "after sees FROM_ENTRYPOINT=$FROM_ENTRYPOINT"\n`);
    expect(status, trace).toBe('success');
    expect(trace).toContain('entrypoint: wrapping /bin/sh');
    expect(trace).toContain('script sees FROM_ENTRYPOINT=yes');
    expect(trace).toContain('after sees FROM_ENTRYPOINT=yes');
  });

  it('fails a job whose image entrypoint never starts the shell, saying how to override it', async () => {
    const { status, trace, id } = await runDockerJob(t, token, `j:\n  image: ${IMAGES.binentry}\n  script:\n    - echo "never printed" > /dev/null\n`);
    expect(status, trace).toBe('failed');
    expect(trace).toContain('the image\'s ENTRYPOINT ["/bin/echo"] did not start the job\'s shell');
    expect(trace).toContain('entrypoint: [""]');
    expect(await labelled(...jobLabels(token, id))).toEqual({ containers: [], networks: [] });
  });

  it('replaces the image entrypoint with the job\'s image:entrypoint, [""] removing it', async () => {
    const yaml = (entrypoint: string) => `j:\n  image:\n    name: ${IMAGES.binentry}\n    entrypoint: ${entrypoint}\n  script:\n    - echo "script ran as $(id -u)" && touch written-by-script\n`;
    const none = await runDockerJob(t, token, yaml('[""]'));
    expect(none.status, none.trace).toBe('success');
    expect(none.trace).toContain('script ran as 1000');
    const wrapper = await runDockerJob(t, token, yaml('["/entrypoint.sh"]'));
    expect(wrapper.status, wrapper.trace).toBe('success');
    expect(wrapper.trace).toContain('entrypoint: wrapping /bin/sh');
    expect(wrapper.trace).toContain('script ran as 1000');
  });

  it('keeps the image entrypoint despite image:entrypoint when disable_entrypoint_overwrite is set, warning', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  image:\n    name: ${IMAGES.entry}\n    entrypoint: [""]\n  script:\n    - echo "FROM_ENTRYPOINT=$FROM_ENTRYPOINT"\n`, { docker: { disable_entrypoint_overwrite: true } });
    expect(status, trace).toBe('success');
    expect(trace).toContain('WARNING: Entrypoint override disabled');
    expect(trace).toContain('FROM_ENTRYPOINT=yes');
  });
});
