/** The artifacts stages against the reference server: E7 upload and E8 download through the real client. */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { ArtifactsError, downloadArtifacts, uploadArtifacts } from '../../src/artifacts/index.js';
import { RunnerApiClient } from '../../src/client/runner-api.js';
import type { BuildPayload } from '../../src/protocol/types.js';
import type { ReferenceServerOptions } from '../../src/server/index.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { buildArchive, rawTarGz, removeTempDirs, tempDir, testContext, treeOf, writeFiles, type TestContext } from './fixtures.js';

/** Two stages: `make` uploads artifacts, `use` depends on them. */
const MAKE_THEN_USE = 'stages: [build, test]\nmake:\n  stage: build\n  script: [x]\n  artifacts: { paths: [a] }\nuse:\n  stage: test\n  script: [x]\n';

interface Harness {
  t: TestServer;
  client: RunnerApiClient;
  runnerToken: string;
  /** E4 until a build arrives. */
  nextBuild(): Promise<BuildPayload>;
  /** A job context with a fresh project dir holding `files`. */
  job(build: BuildPayload, files?: Record<string, string | Buffer>): Promise<TestContext>;
  finish(build: BuildPayload, state: 'success' | 'failed'): Promise<void>;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const harness of open.splice(0)) {
    await harness.client.close();
    await harness.t.close();
  }
  await removeTempDirs();
});

async function harness(options: Partial<ReferenceServerOptions> = {}): Promise<Harness> {
  const t = await startTestServer(options);
  const client = new RunnerApiClient({ url: t.url });
  const runnerToken = (await t.registerRunner()).token;
  const h: Harness = {
    t,
    client,
    runnerToken,
    async nextBuild() {
      const result = await client.requestBuild(runnerToken, undefined);
      if (result.kind !== 'build') throw new Error(`expected a build, got ${result.kind} (${result.status})`);
      return result.build;
    },
    async job(build, files = {}) {
      const projectDir = await tempDir();
      await writeFiles(projectDir, files);
      return testContext({ build, projectDir, stateDir: await tempDir(), client });
    },
    async finish(build, state) {
      const result = await client.updateBuild(build.id, runnerToken, { state, trace: '' });
      expect(result.outcome).toBe('ok');
    },
  };
  open.push(h);
  return h;
}

const TWO_STAGES = (format: string): string => `
stages: [build, test]
compile:
  stage: build
  script: [make]
  artifacts:
    name: bin-$CI_BUILD_REF_NAME
    paths: [dist/, 'reports/*.xml']
    expire_in: 1 week
check:
  stage: test
  script: [make check]
# ${format}
`;

describe.each(['tar.gz', 'zip'] as const)('artifacts through the reference server (%s)', (format) => {
  it('uploads from the first stage and extracts them in the second stage', async () => {
    const h = await harness();
    await h.t.pipeline(TWO_STAGES(format));
    const compile = await h.nextBuild();
    const blob = randomBytes(200_000);
    const producer = await h.job(compile, { 'dist/app.bin': blob, 'dist/sub/readme.txt': 'hello', 'reports/unit.xml': '<ok/>', 'src/main.c': 'not an artifact' });
    await uploadArtifacts(producer, { format, jobSucceeded: true });

    const stored = h.t.server.getJob(compile.id)?.artifacts;
    expect(stored?.filename).toBe(`bin-main.${format}`);
    expect(stored?.expire_at).not.toBeNull();
    expect(producer.lines.join('\n')).toMatch(/Archived 3 file\(s\)/);
    expect(producer.lines.join('\n')).toMatch(/Uploaded bin-main\.\S+: .* MB\/s\)/);
    await h.finish(compile, 'success');

    const check = await h.nextBuild();
    expect(check.depends_on_builds.map((dep) => dep.name)).toEqual(['compile']);
    const consumer = await h.job(check);
    await downloadArtifacts(consumer, { attempts: 1 });
    expect(await readFile(join(consumer.projectDir, 'dist/app.bin'))).toEqual(blob);
    expect(await readFile(join(consumer.projectDir, 'dist/sub/readme.txt'), 'utf8')).toBe('hello');
    expect(await readFile(join(consumer.projectDir, 'reports/unit.xml'), 'utf8')).toBe('<ok/>');
    expect(consumer.lines.join('\n')).toMatch(new RegExp(`Extracted 5 entries .*${format.replace('.', '\\.')}\\) from the artifacts of compile`));
  });

  it('refuses artifacts whose later entry re-aims an earlier link out of the project dir: nothing written', async () => {
    const h = await harness();
    await h.t.pipeline(MAKE_THEN_USE);
    const make = await h.nextBuild();
    const hostile = join(await tempDir(), `artifacts.${format}`);
    await writeFile(hostile, buildArchive(format, [
      { name: 'first.txt', file: 'harmless' },
      { name: 'x/', dir: true },
      { name: 'x/y/', dir: true },
      { name: 'l', symlink: 'x/y/../..' },
      { name: 'x/y', symlink: '.' },
    ]));
    expect((await h.client.uploadArtifacts(make.id, make.token, { path: hostile, filename: `artifacts.${format}` })).outcome).toBe('ok');
    await h.finish(make, 'success');
    const ctx = await h.job(await h.nextBuild(), { 'src/main.c': 'checked out' });
    const before = await treeOf(ctx.projectDir);
    const error = await downloadArtifacts(ctx, { attempts: 1 }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_UNSAFE');
    expect((error as Error).message).toMatch(/artifacts of make .*refusing the whole archive, nothing was extracted: entry "l" is a symlink to x\/y\/\.\.\/\.\./);
    expect(await treeOf(ctx.projectDir)).toEqual(before);
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });
});

describe('artifacts upload failures', () => {
  it('fails with ARTIFACTS_TOO_LARGE when the server answers 413', async () => {
    const h = await harness({ maxArtifactsSize: 50_000 });
    await h.t.pipeline('big:\n  script: [x]\n  artifacts:\n    paths: [big.bin]\n');
    const build = await h.nextBuild();
    const ctx = await h.job(build, { 'big.bin': randomBytes(300_000) });
    const error = await uploadArtifacts(ctx, { format: 'tar.gz', jobSucceeded: true }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ArtifactsError);
    expect((error as ArtifactsError).code).toBe('ARTIFACTS_TOO_LARGE');
    expect((error as Error).message).toMatch(/artifacts are 0\.29 MB, over the server's limit/);
    expect(h.t.server.getJob(build.id)?.artifacts).toBeNull();
  });

  it('retries after injected 5xx answers, re-sending the same archive', async () => {
    const h = await harness({ faults: [{ endpoint: 'upload_artifacts', action: 'error', status: 502, count: 2 }] });
    await h.t.pipeline('job:\n  script: [x]\n  artifacts:\n    paths: [out.txt]\n');
    const build = await h.nextBuild();
    const ctx = await h.job(build, { 'out.txt': 'third time lucky' });
    await uploadArtifacts(ctx, { format: 'tar.gz', jobSucceeded: true, retryBaseMs: 50 });
    expect(ctx.lines.filter((line) => /failed \(HTTP 502\); retrying/.test(line))).toHaveLength(2);
    expect(ctx.lines.filter((line) => /^Archived/.test(line))).toHaveLength(1);
    expect(h.t.server.getJob(build.id)?.artifacts?.filename).toBe('artifacts.tar.gz');
  });

  it('gives up with ARTIFACTS_UPLOAD_FAILED when every attempt fails', async () => {
    const h = await harness({ faults: [{ endpoint: 'upload_artifacts', action: 'error', status: 503 }] });
    await h.t.pipeline('job:\n  script: [x]\n  artifacts:\n    paths: [out.txt]\n');
    const build = await h.nextBuild();
    const ctx = await h.job(build, { 'out.txt': 'never arrives' });
    const error = await uploadArtifacts(ctx, { format: 'zip', jobSucceeded: true, attempts: 3, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARTIFACTS_UPLOAD_FAILED');
    expect((error as Error).message).toMatch(/after 3 attempt\(s\): HTTP 503/);
  });

  it('reports JOB_FORBIDDEN when the job was stopped on the server', async () => {
    const h = await harness();
    await h.t.pipeline('job:\n  script: [x]\n  artifacts:\n    paths: [out.txt]\n');
    const build = await h.nextBuild();
    h.t.server.cancelJob(build.id);
    const ctx = await h.job(build, { 'out.txt': 'late' });
    const error = await uploadArtifacts(ctx, { format: 'tar.gz', jobSucceeded: true }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('JOB_FORBIDDEN');
  });

  it('uploads nothing, with a notice, when no file matched', async () => {
    const h = await harness();
    await h.t.pipeline('job:\n  script: [x]\n  artifacts:\n    paths: [missing/]\n');
    const build = await h.nextBuild();
    const ctx = await h.job(build);
    await uploadArtifacts(ctx, { format: 'tar.gz', jobSucceeded: true });
    expect(ctx.lines.join('\n')).toMatch(/NOTICE: no files matched/);
    expect(h.t.server.getJob(build.id)?.artifacts).toBeNull();
  });
  it('stops at once when the job is aborted mid-upload, and leaves no archive behind', async () => {
    const h = await harness({ faults: [{ endpoint: 'upload_artifacts', action: 'hang' }] });
    await h.t.pipeline('job:\n  script: [x]\n  artifacts:\n    paths: [out.txt]\n');
    const build = await h.nextBuild();
    const controller = new AbortController();
    const ctx = await h.job(build, { 'out.txt': 'x' });
    const aborted = { ...ctx, signal: controller.signal };
    const upload = uploadArtifacts(aborted, { format: 'tar.gz', jobSucceeded: true }).catch((caught: unknown) => caught);
    await waitFor(() => ctx.lines.some((line) => line.startsWith('Archived')));
    controller.abort(new Error('job canceled'));
    expect(((await upload) as Error).message).toBe('job canceled');
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('artifacts:when', () => {
  const cases = [
    { when: 'on_success', succeeded: false, uploads: false },
    { when: 'on_failure', succeeded: false, uploads: true },
    { when: 'on_failure', succeeded: true, uploads: false },
    { when: 'always', succeeded: false, uploads: true },
  ];
  it.each(cases)('when=$when after a job that succeeded=$succeeded uploads=$uploads', async ({ when, succeeded, uploads }) => {
    const h = await harness();
    await h.t.pipeline(`job:\n  script: [x]\n  artifacts:\n    when: ${when}\n    paths: [log.txt]\n`);
    const build = await h.nextBuild();
    const ctx = await h.job(build, { 'log.txt': 'what happened' });
    await uploadArtifacts(ctx, { format: 'tar.gz', jobSucceeded: succeeded });
    expect(h.t.server.getJob(build.id)?.artifacts !== null).toBe(uploads);
    if (!uploads) expect(ctx.lines.join('\n')).toMatch(/Not uploading artifacts/);
  });
});

describe('artifacts download', () => {
  it('takes only the dependencies the job names, and none for dependencies: []', async () => {
    const h = await harness();
    await h.t.pipeline(`
stages: [build, test]
a:
  stage: build
  script: [x]
  artifacts: { paths: [a.txt] }
b:
  stage: build
  script: [x]
  artifacts: { paths: [b.txt] }
only-b:
  stage: test
  script: [x]
  dependencies: [b]
none:
  stage: test
  script: [x]
  dependencies: []
`);
    for (let i = 0; i < 2; i += 1) {
      const build = await h.nextBuild();
      await uploadArtifacts(await h.job(build, { [`${build.name}.txt`]: build.name }), { format: 'tar.gz', jobSucceeded: true });
      await h.finish(build, 'success');
    }
    for (let i = 0; i < 2; i += 1) {
      const build = await h.nextBuild();
      const ctx = await h.job(build);
      await downloadArtifacts(ctx, { attempts: 1 });
      const present = ['a.txt', 'b.txt'].filter((name) => existsSync(join(ctx.projectDir, name)));
      expect(present).toEqual(build.name === 'only-b' ? ['b.txt'] : []);
    }
  });

  it('retries a download after a 5xx and then extracts it', async () => {
    const h = await harness();
    await h.t.pipeline('stages: [build, test]\nmake:\n  stage: build\n  script: [x]\n  artifacts: { paths: [out/] }\nuse:\n  stage: test\n  script: [x]\n');
    const make = await h.nextBuild();
    await uploadArtifacts(await h.job(make, { 'out/data.bin': randomBytes(500_000) }), { format: 'zip', jobSucceeded: true });
    await h.finish(make, 'success');
    const use = await h.nextBuild();
    h.t.server.faults.add({ endpoint: 'download_artifacts', action: 'error', status: 500, count: 1 });
    const ctx = await h.job(use);
    await downloadArtifacts(ctx, { attempts: 2, retryBaseMs: 20 });
    expect(ctx.lines.join('\n')).toMatch(/failed \(HTTP 500\); retrying/);
    expect((await readFile(join(ctx.projectDir, 'out/data.bin'))).length).toBe(500_000);
  });

  it('retries a download whose body the server cut off mid-way', async () => {
    const h = await harness();
    await h.t.pipeline('stages: [build, test]\nmake:\n  stage: build\n  script: [x]\n  artifacts: { paths: [out/] }\nuse:\n  stage: test\n  script: [x]\n');
    const make = await h.nextBuild();
    await uploadArtifacts(await h.job(make, { 'out/data.bin': randomBytes(500_000) }), { format: 'zip', jobSucceeded: true });
    await h.finish(make, 'success');
    const use = await h.nextBuild();
    h.t.server.faults.add({ endpoint: 'download_artifacts', action: 'close', count: 1 });
    const ctx = await h.job(use);
    await downloadArtifacts(ctx, { attempts: 2, retryBaseMs: 20 });
    expect(ctx.lines.join('\n')).toMatch(/failed \((network error|got \d+ bytes).*\); retrying/);
    expect((await readFile(join(ctx.projectDir, 'out/data.bin'))).length).toBe(500_000);
  });

  it('retries and then fails when the downloaded size differs from artifacts_file.size', async () => {
    const h = await harness();
    await h.t.pipeline(MAKE_THEN_USE);
    const make = await h.nextBuild();
    await uploadArtifacts(await h.job(make, { a: 'a' }), { format: 'tar.gz', jobSucceeded: true });
    await h.finish(make, 'success');
    const use = await h.nextBuild();
    const announced = use.depends_on_builds.map((dep) => ({ ...dep, ...(dep.artifacts_file ? { artifacts_file: { ...dep.artifacts_file, size: (dep.artifacts_file.size ?? 0) + 1 } } : {}) }));
    const ctx = await h.job({ ...use, depends_on_builds: announced });
    const error = await downloadArtifacts(ctx, { attempts: 2, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARTIFACTS_DOWNLOAD_FAILED');
    expect((error as Error).message).toMatch(/after 2 attempt\(s\): got \d+ bytes, the server announced \d+/);
    expect(existsSync(join(ctx.projectDir, 'a'))).toBe(false);
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });

  it('refuses a hostile tar.gz while it downloads: nothing written, not retried, the download removed', async () => {
    const h = await harness();
    await h.t.pipeline(MAKE_THEN_USE);
    const make = await h.nextBuild();
    const hostile = join(await tempDir(), 'artifacts.tar.gz');
    await writeFile(hostile, rawTarGz([
      { name: 'first.txt', type: '0', content: 'harmless' },
      { name: 'up', type: '2', linkname: '../..' },
      { name: 'padding.bin', type: '0', content: randomBytes(2_000_000) },
    ]));
    const up = await h.client.uploadArtifacts(make.id, make.token, { path: hostile, filename: 'artifacts.tar.gz', expireIn: '1 week' });
    expect(up.outcome).toBe('ok');
    await h.finish(make, 'success');
    const use = await h.nextBuild();
    const ctx = await h.job(use);
    const error = await downloadArtifacts(ctx, { attempts: 3, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ArtifactsError);
    expect((error as ArtifactsError).code).toBe('ARCHIVE_UNSAFE');
    expect((error as Error).message).toMatch(/artifacts of make .*refusing the whole archive.*"up" is a symlink to \.\.\/\.\./);
    expect(ctx.lines.join('\n')).not.toMatch(/retrying/);
    expect(existsSync(join(ctx.projectDir, 'first.txt'))).toBe(false);
    expect(await readdir(ctx.stateDir)).toEqual([]);
  });

  it('stops at once on a 403 for the dependency token', async () => {
    const h = await harness();
    await h.t.pipeline(MAKE_THEN_USE);
    const make = await h.nextBuild();
    await uploadArtifacts(await h.job(make, { a: 'a' }), { format: 'tar.gz', jobSucceeded: true });
    await h.finish(make, 'success');
    const use = await h.nextBuild();
    const tampered = { ...use, depends_on_builds: use.depends_on_builds.map((dep) => ({ ...dep, token: 'wrong' })) };
    const ctx = await h.job(tampered);
    const error = await downloadArtifacts(ctx, { attempts: 5, retryBaseMs: 20 }).catch((caught: unknown) => caught);
    expect((error as ArtifactsError).code).toBe('ARTIFACTS_DOWNLOAD_FAILED');
    expect((error as Error).message).toMatch(/HTTP 403/);
    expect(ctx.lines.join('\n')).not.toMatch(/retrying/);
  });

  it("downloads and extracts a dependency's zip made by Debian's zip CLI, as the legacy runner uploaded them", async () => {
    const h = await harness();
    await h.t.pipeline('stages: [build, test]\nlegacy:\n  stage: build\n  script: [x]\nuse:\n  stage: test\n  script: [x]\n');
    const legacy = await h.nextBuild();
    const source = await tempDir();
    await writeFiles(source, { 'public/index.html': '<p>legacy</p>' });
    const zipFile = join(await tempDir(), 'artifacts.zip');
    await execa('zip', ['-q', '-r', zipFile, 'public'], { cwd: source });
    expect((await h.client.uploadArtifacts(legacy.id, legacy.token, { path: zipFile, filename: 'artifacts.zip' })).status).toBe(201);
    await h.finish(legacy, 'success');

    const ctx = await h.job(await h.nextBuild());
    await downloadArtifacts(ctx, { attempts: 1 });
    expect(await readFile(join(ctx.projectDir, 'public/index.html'), 'utf8')).toBe('<p>legacy</p>');
    expect(ctx.lines.join('\n')).toMatch(/\(0\.00 MB, zip\) from the artifacts of legacy/);
  });

  it('extracts symlinks from a dependency as symlinks', async () => {
    const h = await harness();
    await h.t.pipeline('stages: [build, test]\nmake:\n  stage: build\n  script: [x]\n  artifacts: { paths: [bin/] }\nuse:\n  stage: test\n  script: [x]\n');
    const make = await h.nextBuild();
    const producer = await h.job(make, { 'bin/tool-1.0': '#!/bin/sh\n' });
    await symlink('tool-1.0', join(producer.projectDir, 'bin/tool'));
    await uploadArtifacts(producer, { format: 'tar.gz', jobSucceeded: true });
    await h.finish(make, 'success');
    const ctx = await h.job(await h.nextBuild());
    await downloadArtifacts(ctx, { attempts: 1 });
    expect(await readlink(join(ctx.projectDir, 'bin/tool'))).toBe('tool-1.0');
  });
});
