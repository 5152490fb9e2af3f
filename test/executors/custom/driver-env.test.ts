/**
 * What a custom driver is given as GitLab Runner 19 gives it, against an https reference server whose
 * CA only the runner's tls-ca-file names: JOB_RESPONSE_FILE is the coordinator's job response as it
 * came; the CA reaches git and the helper commands in the driver's environment through the job's
 * CI_SERVER_TLS_CA_FILE; CUSTOM_ENV_CI_JOB_SERVICES carries the first alias and the service's own
 * variables; run_exec is given the job's script as `build_script`, with GitLab Runner's warning.
 * Build first (`npm run build`): the helper commands are dist/cli/main.js.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runnerSchema } from '../../../src/agent/config/schema.js';
import { defaultServices } from '../../../src/agent/services.js';
import { readTlsMaterial } from '../../../src/client/tls.js';
import { silentLogger } from '../../../src/log/index.js';
import { workDirs } from '../../cli/helpers.js';
import { logText } from '../../helpers/log-text.js';
import { createPki, type Pki } from '../../helpers/pki.js';
import { runOnce } from '../../helpers/run-once.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { customTable, writeDrivers, type Drivers } from './drivers.js';

let pki: Pki;
let t: TestServer;
let token: string;

beforeAll(async () => {
  pki = await createPki();
  const clientTls = readTlsMaterial({ 'tls-ca-file': pki.caCert });
  t = await startTestServer({ tls: { cert: await pki.read(pki.serverCert), key: await pki.read(pki.serverKey) }, clientTls, files: { 'README.md': '# over https\n' } });
  ({ token } = await t.registerRunner());
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const PIPELINE = `
stages: [build, test]
build:
  stage: build
  variables: { MY_VAR: job }
  services:
    - name: registry.example.com/cache/redis:7
      alias: first-alias,second-alias
      variables: { SVC_VAR: "made from $MY_VAR" }
  script:
    - cat README.md
    - echo made > out.txt
  artifacts: { paths: [out.txt] }
test:
  stage: test
  script:
    - cat out.txt
`;

describe('custom executor: the driver environment as GitLab Runner 19 gives it', () => {
  let drivers: Drivers;
  const traces: string[] = [];
  const statuses: string[] = [];
  beforeAll(async () => {
    const d = await workDirs();
    // The private CA is in no system store; where GIT_SSL_CAINFO names the system's, git would use it alone but for the runner's setting.
    drivers = await writeDrivers(d.root, {
      prepare: 'cp "$JOB_RESPONSE_FILE" "$RECORD/response-$CUSTOM_ENV_CI_JOB_NAME.json"',
      run: `echo "$stage" >> "$RECORD/stages"
printf '%s' "$CUSTOM_ENV_CI_JOB_SERVICES" > "$RECORD/services-$CUSTOM_ENV_CI_JOB_NAME"
bash "$script" || { echo "$?" > "$BUILD_EXIT_CODE_FILE"; exit "$BUILD_FAILURE_EXIT_CODE"; }`,
    });
    const p = await t.pipeline(PIPELINE);
    const runner = runnerSchema.parse({ name: 'custom-tls', url: t.url, token, api: 'v4', executor: 'custom', builds_dir: d.builds, cache_dir: d.cache, 'tls-ca-file': pki.caCert, custom: customTable(drivers) });
    const never = new AbortController().signal;
    for (const planned of p.jobs) {
      await runOnce({ runner, services: defaultServices(silentLogger()), waitTimeoutMs: 20_000, pollIntervalMs: 200, stopWaiting: never, stopJob: never });
      const job = await t.waitForJob(planned.id, (j) => j.status === 'success' || j.status === 'failed');
      statuses.push(job.status);
      traces.push(logText(await t.server.getTrace(planned.id)));
    }
  }, 240_000);

  it('clones over https and moves artifacts with the runner\'s CA, given to git and the helper commands as CI_SERVER_TLS_CA_FILE', () => {
    expect(statuses, traces.join('\n----\n')).toEqual(['success', 'success']);
    expect(traces[0]).toContain('# over https');
    expect(traces[0]).toContain('Uploading artifacts...');
    expect(traces[1]).toContain('made');
    expect(traces.join('\n')).not.toContain('tls-ca-file is not handed');
  });

  it('writes the coordinator\'s job response as it came to JOB_RESPONSE_FILE', async () => {
    const text = await readFile(`${drivers.record}/response-build.json`, 'utf8');
    const response = JSON.parse(text) as Record<string, unknown>;
    // GitLab's field layout (git_info, job_info, runner_info), not ci-runner's job model (refspecs, git_depth at the top).
    expect(response).toHaveProperty('git_info.repo_url');
    expect(response).toHaveProperty('job_info.name', 'build');
    expect(response).toHaveProperty('runner_info.timeout');
    expect(response).not.toHaveProperty('refspecs');
    expect(response).not.toHaveProperty('response_body');
    expect((response.services as Array<{ name: string }>)[0]?.name).toBe('registry.example.com/cache/redis:7');
  });

  it('gives CUSTOM_ENV_CI_JOB_SERVICES with the first alias and the service\'s variables, expanded', async () => {
    expect(await drivers.read('services-test')).toBe('');
    expect(JSON.parse(await drivers.read('services-build'))).toEqual([{ name: 'registry.example.com/cache/redis:7', alias: 'first-alias', entrypoint: null, command: null, variables: { SVC_VAR: 'made from job' } }]);
  });

  it('gives run_exec the job\'s script as build_script, warning as GitLab Runner 19 does', async () => {
    expect((await drivers.read('stages')).split('\n')).toContain('build_script');
    expect((await drivers.read('stages')).split('\n')).not.toContain('step_script');
    expect(traces[0]).toContain("WARNING: Starting with version 17.0 the 'build_script' stage will be replaced with 'step_script': https://gitlab.com/groups/gitlab-org/-/epics/6112");
  });
});
