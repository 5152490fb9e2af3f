/**
 * Kubernetes jobs end to end on the reference server and the kit's real cluster: the pod in the job's
 * image with the job's service sidecar reached by its alias, the image's pull_policy from the job, the checkout streamed into the pod and artifacts
 * brought back and passed to the next job, the runner's default image, and a failing script's status.
 */
import { describe, expect, it } from 'vitest';
import type { TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, labelled, skipKubernetes } from './cluster.js';
import { runKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';
import { waitUntil } from '../../cli/helpers.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
}, { 'README.md': '# from the repository\n' });

const namespace = await useNamespace('ci-runner-test-jobs');

describe.skipIf(skipKubernetes)('kubernetes executor jobs', () => {
  it('runs the job in its image with a service sidecar reached by its alias, checkout in, artifacts out to the next job', async () => {
    const yaml = [
      'stages: [build, use]',
      'build:',
      '  stage: build',
      `  image: ${K8S_IMAGES.bash}`,
      '  services:',
      `    - name: ${K8S_IMAGES.httpd}`,
      '      alias: web',
      '  script:',
      '    - echo "bash $BASH_VERSION in $CI_PROJECT_DIR pwd=$(pwd)"',
      '    - cat README.md',
      '    - for host in web ci-runner-test-httpd localhost; do printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc $host 80 | tail -n 1; done',
      '    - mkdir -p out && echo "made in the pod" > out/result.txt',
      '  artifacts:',
      '    paths: [out/]',
      'use:',
      '  stage: use',
      '  script:',
      '    - cat out/result.txt',
    ].join('\n');
    // The job's own service with its alias (API v4 sends services as objects).
    const first = await runKubernetesJob(t, token, `${yaml}\n`, { namespace });
    expect(first.status, first.trace).toBe('success');
    expect(first.trace).toContain(`Using Kubernetes executor with image ${K8S_IMAGES.bash}`);
    expect(first.trace).toMatch(/bash 5\.\d.* in \/builds\/group\/project pwd=\/builds\/group\/project/);
    expect(first.trace).toContain('# from the repository');
    expect(first.trace.match(/hello from the service/g)).toHaveLength(3);
    const second = await runKubernetesJob(t, token, { pipeline: first.pipeline, job: 1 }, { namespace });
    expect(second.status, second.trace).toBe('success');
    expect(second.trace).toContain('made in the pod');
  });

  it('runs a job without an image in the runner default image, and reports a failing script with its exit status', async () => {
    const { status, trace } = await runKubernetesJob(t, token, 'j:\n  script:\n    - \'echo "default image here, bash at $(command -v bash || echo none)"\'\n    - exit 7\n', { namespace });
    expect(status).toBe('failed');
    expect(trace).toContain(`Using Kubernetes executor with image ${K8S_IMAGES.sh}`);
    expect(trace).toContain('default image here, bash at none');
    expect(trace).toContain('ERROR: Job failed: exit status 7');
  });

  it('takes the image\'s pull_policy from the job, within the runner\'s, and refuses one the runner does not allow', async () => {
    const job = (policy: string) => `j:\n  image:\n    name: ${K8S_IMAGES.sh}\n    pull_policy: ${policy}\n  script:\n    - echo pulled as asked\n`;
    const kubernetes = { pull_policy: ['if-not-present', 'never'] };
    const allowed = await runKubernetesJob(t, token, job('never'), { namespace, kubernetes });
    expect(allowed.status, allowed.trace).toBe('success');
    expect(allowed.trace).toContain('pulled as asked');
    const refused = await runKubernetesJob(t, token, job('always'), { namespace, kubernetes });
    expect(refused.status).toBe('failed');
    expect(refused.trace).toContain('ERROR: Job failed: invalid pull policy for container "build": pull_policy ([Always]) defined in GitLab pipeline config is not one of the allowed_pull_policies ([IfNotPresent Never])');
  });

  it('refuses an image or service outside allowed_images / allowed_services with GitLab Runner\'s lines, before any pod', async () => {
    const kubernetes = { allowed_images: ['ci-runner-test/user:*'], allowed_services: ['ci-runner-test/nolisten:*'] };
    const image = await runKubernetesJob(t, token, `j:\n  image: ${K8S_IMAGES.bash}\n  script:\n    - echo never\n`, { namespace, kubernetes });
    expect(image.status).toBe('failed');
    expect(image.trace).toContain(`ERROR: The "${K8S_IMAGES.bash}" image is not present on list of allowed images:`);
    expect(image.trace).toContain('ERROR: Job failed: disallowed image');
    const service = await runKubernetesJob(t, token, `j:\n  services: [${K8S_IMAGES.httpd}]\n  script:\n    - echo never\n`, { namespace, kubernetes });
    expect(service.status).toBe('failed');
    expect(service.trace).toContain(`ERROR: The "${K8S_IMAGES.httpd}" image is not present on list of allowed services:`);
  });

  it('gives a service the job\'s public variables and its own, never a secret variable or the job token', async () => {
    const yaml = [
      'j:',
      '  variables:',
      '    SERVICE_PUBLIC: public-for-the-service',
      '  services:',
      `    - name: ${K8S_IMAGES.httpd}`,
      '      alias: envsvc',
      // The service serves its own environment.
      '      command: ["sh", "-c", "mkdir -p /tmp/w && env > /tmp/w/index.html && exec httpd -f -p 80 -h /tmp/w"]',
      '      variables:',
      '        OWN_FROM_SECRET: "own-$PROJECT_SECRET"',
      '  script:',
      '    - for i in $(seq 1 60); do wget -q -O env.txt http://localhost/ && break; sleep 1; done',
      '    - sed "s/^/svc-env /" env.txt',
      '',
    ].join('\n');
    // A pipeline variable: GitLab sends it with public: false, as a project's CI/CD variables.
    const { status, trace } = await runKubernetesJob(t, token, yaml, { namespace, variables: { PROJECT_SECRET: 'project-secret-value' } });
    expect(status, trace).toBe('success');
    expect(trace).toContain('svc-env SERVICE_PUBLIC=public-for-the-service');
    expect(trace).toMatch(/svc-env CI_JOB_ID=\d+/);
    // Its value is masked in the log; the name says the service had it.
    expect(trace).toContain('svc-env OWN_FROM_SECRET=own-[MASKED]');
    expect(trace).not.toContain('svc-env PROJECT_SECRET=');
    expect(trace).not.toMatch(/svc-env (CI_JOB_TOKEN|CI_BUILD_TOKEN|CI_REPOSITORY_URL|CI_BUILD_REPO)=/);
  });

  it('leaves no pod or secret behind', async () => {
    const { status, trace, id } = await runKubernetesJob(t, token, `j:\n  services: [${K8S_IMAGES.httpd}]\n  script:\n    - "true"\n`, { namespace });
    expect(status, trace).toBe('success');
    await waitUntil(async () => {
      const left = await labelled(cluster!.core, namespace, token, id);
      return left.undeleted.length === 0 && left.secrets.length === 0;
    }, 60_000, 'the job\'s pod and secret deleted');
  });
});
