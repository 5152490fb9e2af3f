/**
 * What a pusher must not get from the kubernetes executor (issue 34), on the kit's real cluster:
 * a variable whose value looks like a path under the pod's state dir but climbs out of it (item 1),
 * or a file variable whose name does (item 3), must not bring a file of the runner's machine into
 * the pod; and the copy-back of the pod's files stops at its byte budget (item 5).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { jobDirs } from '../../../src/agent/job/build-dir.js';
import type { TestServer } from '../../helpers/server.js';
import { skipKubernetes } from './cluster.js';
import { runKubernetesJob, useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
let token: string;
useKubernetesTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

const namespace = await useNamespace('ci-runner-test-hostile');

/** A root-only file outside every dir of the runner, with content of its own. */
async function hostFile(): Promise<{ path: string; content: string; name: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-host-file-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const name = `host-secret-${randomBytes(4).toString('hex')}`;
  const content = `host content ${randomBytes(8).toString('hex')}`;
  await writeFile(join(dir, name), `${content}\n`, { mode: 0o600 });
  return { path: join(dir, name), content, name };
}

describe.skipIf(skipKubernetes)('kubernetes executor: what a job cannot reach', () => {
  it('a variable whose value climbs out of the pod\'s state dir brings no file of the runner\'s machine into the pod', async () => {
    const target = await hostFile();
    // What the pod's state dir is, then up to / and down to the file; expanded by the runner.
    const climb = `\${CI_PROJECT_DIR}.tmp/build-\${CI_JOB_ID}/${'../'.repeat(30)}${target.path.slice(1)}`;
    const yaml = [
      'j:',
      '  variables:',
      `    CLIMB: "${climb}"`,
      '  script:',
      '    - echo "value is $CLIMB"',
      `    - 'found=$(find / -name ${target.name} 2>/dev/null); echo "found: [$found]"; for f in $found; do cat "$f"; done'`,
      '',
    ].join('\n');
    const { status, trace } = await runKubernetesJob(t, token, yaml, { namespace });
    expect(status, trace).toBe('success');
    expect(trace).toContain('found: []');
    expect(trace).not.toContain(target.content);
  }, 240_000);

  it('a file variable reaches the pod as its file; one named to climb out of the state dir is skipped, bringing nothing', async () => {
    const target = await hostFile();
    const name = `${'../'.repeat(30)}${target.path.slice(1)}`;
    const yaml = `j:\n  script:\n    - 'echo "conf: $(cat "$CONF")"'\n    - 'echo "found: [$(find / -name ${target.name} 2>/dev/null)]"'\n`;
    const pipeline = await t.pipeline(yaml, { CONF: 'from a file variable', [name]: target.path }, { CONF: { file: true, masked: false }, [name]: { file: true, masked: false } });
    const { status, trace } = await runKubernetesJob(t, token, { pipeline, job: 0 }, { namespace });
    expect(status, trace).toBe('success');
    expect(trace).toContain('conf: from a file variable');
    expect(trace).toContain('WARNING: file variables skipped, their names are not GitLab\'s');
    expect(trace).toContain('found: []');
    expect(trace).not.toContain(target.content);
  }, 240_000);

  it('stops the copy-back of a 100 GB sparse file at artifacts_extract_limit, fails the job saying so, and keeps nothing of it', async () => {
    const yaml = 'j:\n  script:\n    - truncate -s 100G huge.bin && echo "made $(ls -l huge.bin)"\n  artifacts:\n    paths: [huge.bin]\n';
    const started = Date.now();
    const { status, trace, dirs, id } = await runKubernetesJob(t, token, yaml, { namespace, runner: { artifacts_extract_limit: '20MB' } });
    expect(status, trace).toBe('failed');
    expect(trace).toContain('made ');
    expect(trace).toContain("ERROR: Job failed: bringing the build's files back from the kubernetes executor failed: the build's files in the pod come to more than 20.0 MB (artifacts_extract_limit); the copy-back stopped there and nothing of it was kept");
    // Stopped at the header: not after streaming gigabytes.
    expect(Date.now() - started).toBeLessThan(120_000);
    const project = jobDirs(dirs.builds, token, 0, { id, repo_url: `${t.url}/group/project.git`, project_id: 1 }, false).projectDir;
    // The checkout is there, the file the pod made is not.
    expect(await readdir(project)).toContain('README.md');
    expect(await readdir(project)).not.toContain('huge.bin');
    const left = await readdir(`${project}.tmp`).catch(() => [] as string[]);
    expect(left.filter((name) => name !== `build-${id}`)).toEqual([]);
    const scratch = await readdir(join(`${project}.tmp`, `build-${id}`)).catch(() => [] as string[]);
    expect(scratch.filter((name) => name.startsWith('collect-'))).toEqual([]);
  }, 240_000);
});
