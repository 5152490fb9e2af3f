/**
 * Docker jobs end to end on the reference server: the image chosen, the script in the container with
 * bash or sh, the in-container paths, and clear failures for images the runner cannot or may not use.
 */
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { IMAGES, skipDocker } from './engine.js';
import { runDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

describe.skipIf(skipDocker)('docker executor jobs', () => {
  it('runs the script in the runner default image, in the project checkout mounted under /builds', async () => {
    const { status, trace } = await runDockerJob(t, token, 'j:\n  script:\n    - echo "dir=$CI_PROJECT_DIR builds=$CI_BUILDS_DIR pwd=$(pwd)"\n    - cat README.md\n    - command -v bash || echo "no bash here"\n');
    expect(status, trace).toBe('success');
    expect(trace).toContain(`Using docker image ${IMAGES.sh} with ID sha256:`);
    expect(trace).toContain('dir=/builds/group/project builds=/builds pwd=/builds/group/project');
    expect(trace).toContain('# p');
    expect(trace).toContain('no bash here');
  });

  it('uses the image the pipeline names over the runner default, and bash when the image has it', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  image: ${IMAGES.bash}\n  script:\n    - echo "bash $BASH_VERSION"\n`);
    expect(status, trace).toBe('success');
    expect(trace).toContain(`Using docker image ${IMAGES.bash} with ID`);
    expect(trace).toMatch(/bash 5\.\d/);
  });

  it('expands variables in the image name', async () => {
    const { status, trace } = await runDockerJob(t, token, 'j:\n  image: ci-runner-test/$FLAVOUR:1\n  variables:\n    FLAVOUR: bash\n  script:\n    - echo "bash $BASH_VERSION"\n');
    expect(status, trace).toBe('success');
    expect(trace).toContain(`Using docker image ${IMAGES.bash} with ID`);
  });

  it('fails with a clear line when neither the job nor the runner names an image', async () => {
    const { status, trace } = await runDockerJob(t, token, 'j:\n  script:\n    - echo never\n', { docker: { image: undefined } });
    expect(status).toBe('failed');
    expect(trace).toContain('ERROR: Job failed: no image: the job names none and [runners.docker] image is not set');
  });

  it('fails saying what was tried when pull_policy = never and the image is missing', async () => {
    const { status, trace } = await runDockerJob(t, token, 'j:\n  image: ci-runner-test/missing:404\n  script:\n    - echo never\n', { docker: { pull_policy: 'never' } });
    expect(status).toBe('failed');
    expect(trace).toContain('could not get image "ci-runner-test/missing:404": not present locally and pull_policy = never');
    expect(trace).not.toContain('$ echo never');
  });

  it('refuses image and service names docker would read as options', async () => {
    const image = await runDockerJob(t, token, 'j:\n  image: "--volume=/:/host"\n  script:\n    - echo never\n');
    expect(image.status).toBe('failed');
    expect(image.trace).toContain('ERROR: Job failed: invalid image name "--volume=/:/host"');
    const service = await runDockerJob(t, token, 'j:\n  services: ["--privileged"]\n  script:\n    - echo never\n');
    expect(service.status).toBe('failed');
    expect(service.trace).toContain('ERROR: Job failed: invalid service name "--privileged"');
  });

  it('runs after_script in the image after a failing script, and reports the exit status', async () => {
    const { status, trace } = await runDockerJob(t, token, 'j:\n  script:\n    - echo building > out.txt\n    - exit 3\n  after_script:\n    - echo "after sees $(cat out.txt)"\n');
    expect(status).toBe('failed');
    expect(trace).toContain('after sees building');
    expect(trace).toContain('ERROR: Job failed: exit status 3');
  });
});
