import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { apiFromProbe } from '../../src/client/connect.js';
import { classify } from '../../src/client/retryable.js';
import { apiV4BaseUrl } from '../../src/protocol/v4/base-url.js';
import { supportedFailureReason } from '../../src/protocol/v4/failure-reason.js';
import { FEATURES, runnerFeatures } from '../../src/protocol/v4/features.js';
import { cancelRequest, formatChecksum, formatInclusiveRange, parseUpdateInterval, TraceChecksum } from '../../src/protocol/v4/trace-codecs.js';

describe('the v4 base URL', () => {
  it('appends /api/v4/ after dropping one trailing /ci, as GitLab Runner does', () => {
    expect(apiV4BaseUrl('https://gitlab.example.com/').href).toBe('https://gitlab.example.com/api/v4/');
    expect(apiV4BaseUrl('https://gitlab.example.com/ci').href).toBe('https://gitlab.example.com/api/v4/');
    expect(apiV4BaseUrl('https://h/gitlab//').href).toBe('https://h/gitlab/api/v4/');
    expect(apiV4BaseUrl('https://h/ci/ci').href).toBe('https://h/ci/api/v4/');
    expect(() => apiV4BaseUrl('ftp://h/')).toThrow(/only http and https/);
  });
});

describe('the v4 trace codecs', () => {
  it('writes Content-Range with an inclusive last byte and refuses an empty part', () => {
    expect(formatInclusiveRange(0, 494)).toBe('0-493');
    expect(formatInclusiveRange(972, 1435)).toBe('972-1434');
    expect(() => formatInclusiveRange(7, 7)).toThrow(RangeError);
  });

  it('reads the update interval in whole seconds, capped at 15 minutes, ignoring zero and junk', () => {
    expect(parseUpdateInterval('3')).toBe(3000);
    expect(parseUpdateInterval(' 30 ')).toBe(30_000);
    expect(parseUpdateInterval('86400')).toBe(15 * 60_000);
    for (const bad of [undefined, '', '0', '-1', '1.5', 'soon']) expect(parseUpdateInterval(bad)).toBeUndefined();
  });

  it('reads Job-Status canceling as a graceful cancel, canceled and failed as stop now', () => {
    expect(cancelRequest('canceling')).toBe('graceful');
    expect(cancelRequest('canceled')).toBe('now');
    expect(cancelRequest('failed')).toBe('now');
    expect(cancelRequest('running')).toBeUndefined();
    expect(cancelRequest(undefined)).toBeUndefined();
  });

  it('checksums the trace as crc32: and 8 lower-case hex digits, across pieces', () => {
    const whole = Buffer.from('hello, trace\n'.repeat(100));
    const sum = new TraceChecksum();
    sum.update(whole.subarray(0, 7));
    sum.update(whole.subarray(7));
    expect(sum.toString()).toBe(formatChecksum(crc32(whole)));
    expect(sum.bytesize).toBe(whole.length);
    expect(formatChecksum(0x1a)).toBe('crc32:0000001a');
  });
});

describe('failure reasons', () => {
  it('keeps a reason the server accepts and maps newer ones to what it knows, else unknown_failure', () => {
    expect(supportedFailureReason('script_failure', [])).toBe('script_failure');
    expect(supportedFailureReason('job_execution_timeout', undefined)).toBe('job_execution_timeout');
    expect(supportedFailureReason('image_pull_failure', ['image_pull_failure'])).toBe('image_pull_failure');
    expect(supportedFailureReason('image_pull_failure', ['script_failure'])).toBe('runner_system_failure');
    expect(supportedFailureReason('runner_configuration_error', [])).toBe('script_failure');
    expect(supportedFailureReason('unknown_failure', [])).toBe('unknown_failure');
    expect(supportedFailureReason(undefined, [])).toBe('script_failure');
  });

  it('sends runner_interrupted (a job aborted by SIGTERM) where the server lists it, else unknown_failure as GitLab Runner does', () => {
    expect(supportedFailureReason('runner_interrupted', ['runner_interrupted'])).toBe('runner_interrupted');
    expect(supportedFailureReason('runner_interrupted', ['script_failure', 'runner_system_failure'])).toBe('unknown_failure');
  });
});

describe('features and API detection', () => {
  it('announces what the executor does: image and services for docker only, release steps, no terminal', () => {
    expect(runnerFeatures('shell')).toMatchObject({ image: false, services: false, shared: true, cancel_gracefully: true, multi_build_steps: true, terminal: false, raw_variables: true });
    expect(runnerFeatures('docker')).toMatchObject({ image: true, services: true, shared: false });
    expect(Object.values(runnerFeatures('')).every((value) => value === false)).toBe(true);
  });

  it('sends every feature GitLab Runner 19.3 sends, in its order, each with its support', () => {
    // GitLab Runner v19.3.0 common/network.go, FeaturesInfo's JSON names.
    const gitlabRunner = [
      'variables', 'image', 'services', 'artifacts', 'cache', 'fallback_cache_keys', 'shared', 'upload_multiple_artifacts',
      'upload_raw_artifacts', 'session', 'terminal', 'refspecs', 'masking', 'proxy', 'raw_variables', 'artifacts_exclude',
      'multi_build_steps', 'trace_reset', 'trace_checksum', 'trace_size', 'vault_secrets', 'cancelable', 'return_exit_code',
      'service_variables', 'service_multiple_aliases', 'image_executor_opts', 'service_executor_opts', 'cancel_gracefully',
      'native_steps_integration', 'two_phase_job_commit', 'job_inputs',
    ];
    expect(Object.keys(runnerFeatures('shell'))).toEqual(gitlabRunner);
    for (const [name, entry] of Object.entries(FEATURES)) {
      const announced = ['shell', 'docker', 'kubernetes'].some((executor) => runnerFeatures(executor)[name as keyof typeof FEATURES]);
      expect(entry.support.status === 'honoured', name).toBe(announced);
    }
  });

  it('takes a 404 to the token-less probe for v1, another answer for v4, and a 5xx for no answer', () => {
    expect(apiFromProbe(404)).toBe('v1');
    expect(apiFromProbe(403)).toBe('v4');
    expect(apiFromProbe(400)).toBe('v4');
    expect(apiFromProbe(502)).toBeUndefined();
    expect(apiFromProbe(-1)).toBeUndefined();
  });

  it('classifies the v4 answers from the one table: 202 repeats a final update, 409/422/429 are retried', () => {
    expect(classify('updateJobV4', 200)).toBe('ok');
    expect(classify('updateJobV4', 202)).toBe('retry');
    expect(classify('updateJobV4', 403)).toBe('final');
    for (const status of [409, 422, 429]) expect(classify('requestJobV4', status)).toBe('retry');
    expect(classify('requestJobV4', 204)).toBe('ok');
    expect(classify('registerRunnerV4', 410)).toBe('final');
    expect(classify('patchTraceV4', 416)).toBe('final');
  });
});
