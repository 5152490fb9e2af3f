/**
 * ARTIFACT_COMPRESSION_LEVEL against the reference server over v4: `fastest` stores the artifact's
 * files (the upload is as large as they are), `slowest` deflates them, a name it does not know falls
 * back to the default with GitLab Runner's warning.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runV4Job } from '../helpers/v4-job.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let t: TestServer;
let token: string;
beforeAll(async () => {
  t = await startTestServer({ files: { 'README.md': '# p\n' } });
  ({ token } = await t.registerRunner());
});
afterAll(async () => {
  await t.close();
});

/** The size of the artifact a job makes of 200 KB of repeated text with `level`. */
async function artifactSize(level: string): Promise<{ size: number; trace: string }> {
  const { job, status, trace } = await runV4Job(t, token, `j:\n  variables:\n    ARTIFACT_COMPRESSION_LEVEL: ${level}\n  script:\n    - head -c 200000 /dev/zero | tr '\\0' a > out.txt\n  artifacts:\n    paths: [out.txt]\n`);
  expect(status, trace).toBe('success');
  return { size: job.artifacts?.size ?? 0, trace };
}

describe('ARTIFACT_COMPRESSION_LEVEL', () => {
  it('stores with fastest, deflates with slowest, and warns about a level it does not know', async () => {
    const fastest = await artifactSize('fastest');
    const slowest = await artifactSize('slowest');
    expect(fastest.size).toBeGreaterThan(200_000);
    expect(slowest.size).toBeLessThan(10_000);
    const unknown = await artifactSize('extreme');
    expect(unknown.trace).toContain('WARNING: ARTIFACT_COMPRESSION_LEVEL: compression level "extreme" is invalid, falling back to default');
    expect(unknown.size).toBeLessThan(10_000);
  });
});
