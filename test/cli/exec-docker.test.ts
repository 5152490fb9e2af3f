import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IMAGES, skipDocker } from '../executors/docker/engine.js';
import { cli } from './cli.js';
import { makeRepo, removeTempDirs, repoFingerprint, tempDir } from './exec-helpers.js';

afterAll(removeTempDirs);

describe.skipIf(skipDocker)('exec --executor docker', () => {
  it("runs the job in the job's image with the working tree's uncommitted files, leaving the repository as it was", async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': `in-container:\n  image: ${IMAGES.sh}\n  script:\n    - cat note.txt\n    - test -f /.dockerenv && echo "inside a container"\n`, 'note.txt': 'committed\n' });
    await writeFile(join(repo, 'note.txt'), 'edited, not committed\n');
    const before = await repoFingerprint(repo);
    const state = await tempDir('state');
    const result = await cli(['exec', '--executor', 'docker', '--docker-pull-policy', 'never'], { cwd: repo, env: { XDG_STATE_HOME: state } });
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('edited, not committed');
    expect(result.stdout).toContain('inside a container');
    expect(await repoFingerprint(repo)).toEqual(before);
  });

  it("takes GitLab Runner's form `exec docker JOB`", async () => {
    const repo = await makeRepo({ '.gitlab-ci.yml': `in-container:\n  image: ${IMAGES.sh}\n  script:\n    - test -f /.dockerenv && echo "inside a container"\nother:\n  script: echo other ran\n` });
    const result = await cli(['exec', 'docker', 'in-container', '--docker-pull-policy', 'never'], { cwd: repo, env: { XDG_STATE_HOME: await tempDir('state') } });
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toContain('inside a container');
    expect(result.stdout).not.toContain('other ran');
  });
});
