/**
 * `exec` on what the engine's newer keywords do, end to end with real jobs: `resource_group` (two jobs
 * of one group never overlap while two jobs run at once, the waiting one says so), `workflow:
 * auto_cancel: on_job_failure`, `retry: exit_codes`, `id_tokens` (the job decodes its JWT and verifies
 * it against the server's keys) and the test summary from a JUnit report.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from './cli.js';
import { makeRepo, removeTempDirs, tempDir } from './exec-helpers.js';

let state: string;
let scratch: string;

beforeAll(async () => {
  state = await tempDir('state');
  scratch = await tempDir('scratch');
});
afterAll(removeTempDirs);

function exec(repo: string, args: string[] = []) {
  return cli(['exec', '--color=false', ...args], { cwd: repo, env: { XDG_STATE_HOME: state } });
}

describe('exec and resource_group', () => {
  it('never runs two jobs of one group at once, while it runs two other jobs at once', { timeout: 180_000 }, async () => {
    const times = join(scratch, 'times.log');
    const repo = await makeRepo({
      '.gitlab-ci.yml': `.deploy:
  resource_group: production
  script:
    - echo "start $CI_JOB_NAME" >> "$TIMES"
    # The first deploy ends only once the free job has started: two jobs run at once.
    - for i in $(seq 1 600); do grep -q '^start free' "$TIMES" && break; sleep 0.1; done
    - sleep 1
    - echo "end $CI_JOB_NAME" >> "$TIMES"
deploy-a:
  extends: .deploy
deploy-b:
  extends: .deploy
free:
  script:
    - echo "start free" >> "$TIMES"
    - sleep 1
    - echo "end free" >> "$TIMES"
`,
    });
    const result = await exec(repo, ['--concurrent', '2', '-v', `TIMES=${times}`]);
    expect(result.exitCode, result.all).toBe(0);
    const events = (await readFile(times, 'utf8')).trim().split('\n');
    const deploys = events.filter((line) => line.includes('deploy'));
    expect(deploys).toHaveLength(4);
    // start X, end X, start Y, end Y: the second starts only after the first ends.
    expect(deploys[0]?.replace('start', 'end')).toBe(deploys[1]);
    expect(deploys[2]?.replace('start', 'end')).toBe(deploys[3]);
    expect(events.indexOf('start free')).toBeLessThan(events.indexOf(deploys[1]!));
    expect(result.all).toMatch(/note: job deploy-b is waiting_for_resource: another job holds its resource group \(resource_group: production\)/);
  });
});

describe('exec and workflow: auto_cancel: on_job_failure', () => {
  it('all: cancels the job still running when another fails the pipeline', { timeout: 180_000 }, async () => {
    const started = join(scratch, 'slow-started');
    const repo = await makeRepo({
      '.gitlab-ci.yml': `workflow:
  auto_cancel:
    on_job_failure: all
broken:
  script:
    - for i in $(seq 1 600); do test -e "$STARTED" && break; sleep 0.1; done
    - exit 1
slow:
  script:
    - touch "$STARTED"
    - sleep 120
`,
    });
    const result = await exec(repo, ['--concurrent', '2', '-v', `STARTED=${started}`]);
    expect(result.exitCode, result.all).toBe(1);
    expect(result.all).toMatch(/^broken\s+test\s+failed\s/m);
    expect(result.all).toMatch(/^slow\s+test\s+canceled\s/m);
  });
});

describe('exec and retry, id_tokens, JUnit reports', () => {
  it('retries on an exit code, gives a verifiable JWT with aud expanded, and prints the test summary', { timeout: 180_000 }, async () => {
    const counter = join(scratch, 'attempts');
    const repo = await makeRepo({
      'verify.mjs': `import { createPublicKey, verify } from 'node:crypto';
const keys = await (await fetch(process.env.CI_SERVER_URL + '/oauth/discovery/keys')).json();
const [head, body, signature] = process.env.VAULT_ID_TOKEN.split('.');
const header = JSON.parse(Buffer.from(head, 'base64url'));
const claims = JSON.parse(Buffer.from(body, 'base64url'));
const key = createPublicKey({ key: keys.keys.find((k) => k.kid === header.kid), format: 'jwk' });
const ok = verify('sha256', Buffer.from(head + '.' + body), key, Buffer.from(signature, 'base64url'));
console.log('JWT ' + JSON.stringify({ ok, aud: claims.aud, job: claims.job_id === process.env.CI_JOB_ID, iss: claims.iss === process.env.CI_SERVER_URL, local: claims.ci_runner_local_token }));
`,
      'junit.xml': `<testsuites><testsuite name="math">
<testcase classname="math" name="adds"/><testcase classname="math" name="subtracts"/><testcase classname="math" name="multiplies"/>
<testcase classname="math" name="divides"><failure message="off by one"/></testcase>
<testcase classname="math" name="roots"><skipped/></testcase>
</testsuite></testsuites>
`,
      '.gitlab-ci.yml': `variables:
  VAULT_HOST: vault.example.com
flaky:
  retry:
    max: 2
    exit_codes: 3
  script:
    - n=$(( $(cat "$COUNTER" 2>/dev/null || echo 0) + 1 )); echo $n > "$COUNTER"; echo "attempt $n"
    - test $n -ge 2 || exit 3
verify:
  id_tokens:
    VAULT_ID_TOKEN:
      aud: https://$VAULT_HOST/$CI_COMMIT_REF_NAME
  script:
    - node verify.mjs
tests:
  coverage: '/Coverage: \\d+\\.\\d+%/'
  script:
    - 'echo "Coverage: 81.5%"'
  artifacts:
    reports:
      junit: junit.xml
`,
    });
    const result = await exec(repo, ['-v', `COUNTER=${counter}`]);
    expect(result.exitCode, result.all).toBe(0);
    expect(await readFile(counter, 'utf8')).toBe('2\n');
    expect(result.all).toMatch(/^flaky\s+test\s+success\s/m);
    expect(result.all).toContain('JWT {"ok":true,"aud":"https://vault.example.com/main","job":true,"iss":true,"local":true}');
    expect(result.all).toMatch(/^TESTS OF\s+PASSED\s+FAILED\s+SKIPPED\s+COVERAGE$/m);
    expect(result.all).toMatch(/^tests\s+3\s+1\s+1\s+81\.5%$/m);
    expect(result.all).toContain('Failed tests of tests: math.divides');
  });
});
