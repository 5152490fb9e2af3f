import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli } from './cli.js';
import { workDirs } from './helpers.js';

let t: TestServer;
let token: string;

beforeAll(async () => {
  t = await startTestServer({
    files: {
      'README.md': '# project\n',
      'ci/print.yml': '.print:\n  script:\n    - echo "job=$CI_JOB_NAME node=$CI_NODE_INDEX/$CI_NODE_TOTAL provider=$PROVIDER source=$CI_PIPELINE_SOURCE branch=$CI_COMMIT_BRANCH target=$TARGET"\n',
    },
  });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

async function runOnce() {
  const dirs = await workDirs();
  return cli(['run-once', '--url', t.url, '--token', token, '--builds-dir', dirs.builds, '--cache-dir', dirs.cache, '--wait-timeout', '20s']);
}

describe('run-once with a pipeline that uses the engine', () => {
  it('gives each matrix job its name, node index, matrix and rule variables, and the pipeline source', async () => {
    const pipeline = await t.pipeline(`
include: ci/print.yml
deploy:
  extends: .print
  parallel:
    matrix:
      - PROVIDER: [aws, gcp]
  rules:
    - if: $CI_COMMIT_BRANCH == "main" && $PROVIDER =~ /^(aws|gcp)$/
      variables: { TARGET: production }
`);
    expect(pipeline.jobs.map((job) => job.name)).toEqual(['deploy: [aws]', 'deploy: [gcp]']);
    for (const job of pipeline.jobs) {
      const result = await runOnce();
      expect(result.exitCode, result.all).toBe(0);
      expect(t.server.getJob(job.id)?.status).toBe('success');
    }
    const traces = await Promise.all(pipeline.jobs.map(async (job) => (await t.server.getTrace(job.id)).toString('utf8')));
    expect(traces[0]).toContain('job=deploy: [aws] node=1/2 provider=aws source=push branch=main target=production');
    expect(traces[1]).toContain('job=deploy: [gcp] node=2/2 provider=gcp source=push branch=main target=production');
  });
});
