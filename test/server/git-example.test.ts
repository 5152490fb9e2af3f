import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';
import { materializeExampleProject } from '../../src/server/example-project.js';
import { packageRoot } from '../../src/util/package-root.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { resolveRef, ZERO_SHA, previousSha } from '../../src/server/git/refs.js';
import { hasCode } from '../../src/util/errors.js';

const cleanup: string[] = [];

afterAll(async () => {
  for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
});

const git = async (cwd: string, ...args: string[]): Promise<string> => (await execa('git', args, { cwd })).stdout.trim();

/** Runs an example script the way a job would: bash, in the project dir, with some CI variables. */
const runScript = (cwd: string, script: string) =>
  execa('bash', [script], {
    cwd,
    reject: false,
    env: { APP_NAME: 'hello', GREETING: 'Hi', CI_BUILD_REF: 'abcdef0123456789', CI_BUILD_REF_NAME: 'main' },
  });

describe('materializeExampleProject', () => {
  it('creates a git repository with one commit on main and returns its pipeline, which parses', async () => {
    const { path, pipeline } = await materializeExampleProject();
    cleanup.push(path);
    expect(await git(path, 'rev-list', '--count', 'HEAD')).toBe('1');
    expect(await git(path, 'symbolic-ref', 'HEAD')).toBe('refs/heads/main');
    expect(await git(path, 'status', '--porcelain')).toBe('');
    expect(await git(path, 'show', 'HEAD:.gitlab-ci.yml')).toBe(pipeline.trimEnd());
    expect(await git(path, 'ls-files')).toContain('build.sh');

    const spec = parsePipeline(pipeline);
    expect(spec.stages).toEqual(['build', 'test', 'package']);
    expect(spec.jobs.map((job) => job.name)).toEqual(['build', 'test:unit', 'test:flaky', 'package']);
    expect(spec.jobs.find((job) => job.name === 'build')?.artifacts?.paths).toEqual(['dist/']);
    expect(spec.jobs.find((job) => job.name === 'test:flaky')?.allowFailure).toBe(true);

    const head = await resolveRef(path, 'main');
    expect(head).toEqual({ sha: await git(path, 'rev-parse', 'HEAD'), tag: false });
    await expect(previousSha(path, head.sha)).resolves.toBe(ZERO_SHA);
  });

  it('gives the same commit for the same files, whoever runs it', async () => {
    const first = await materializeExampleProject();
    const second = await materializeExampleProject();
    cleanup.push(first.path, second.path);
    expect(await git(first.path, 'rev-parse', 'HEAD')).toBe(await git(second.path, 'rev-parse', 'HEAD'));
  });

  it('uses a target directory when given, and refuses one that is not empty', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'ci-runner-example-test-'));
    cleanup.push(parent);
    const target = join(parent, 'nested', 'repo');
    const { path } = await materializeExampleProject(target);
    expect(path).toBe(target);
    expect(await git(target, 'rev-list', '--count', 'HEAD')).toBe('1');
    const full = join(parent, 'full');
    await execa('mkdir', [full]);
    await writeFile(join(full, 'x'), 'x');
    const error: unknown = await materializeExampleProject(full).catch((caught: unknown) => caught);
    expect(hasCode(error, 'EXAMPLE_TARGET_NOT_EMPTY')).toBe(true);
  });

  it("has jobs whose scripts work: build makes dist/, test checks it, package releases it", async () => {
    const { path } = await materializeExampleProject();
    cleanup.push(path);
    const build = await runScript(path, 'build.sh');
    expect(build.exitCode, build.stderr).toBe(0);
    expect(await readFile(join(path, 'dist', 'app.txt'), 'utf8')).toBe('Hi, world!\nBuilt from commit abcdef01 on main.\n');
    const test = await runScript(path, 'test.sh');
    expect(test.exitCode, test.stderr).toBe(0);
    const pkg = await runScript(path, 'package.sh');
    expect(pkg.exitCode, pkg.stderr).toBe(0);
    expect(await readFile(join(path, 'release', 'hello-main.txt.sha256'), 'utf8')).toMatch(/^[0-9a-f]{64} {2}hello-main\.txt\n$/);
    // Build outputs are ignored, so the checkout stays clean for the next job.
    expect(await git(path, 'status', '--porcelain')).toBe('');
  });

  it('has a test job that fails without the build artifacts', async () => {
    const { path } = await materializeExampleProject();
    cleanup.push(path);
    const test = await runScript(path, 'test.sh');
    expect(test.exitCode).not.toBe(0);
    expect(test.stderr).toContain('dist/app.txt is missing');
  });

  it('finds the package root from the source tree', () => {
    expect(packageRoot()).toBe(join(import.meta.dirname, '..', '..'));
  });
});
