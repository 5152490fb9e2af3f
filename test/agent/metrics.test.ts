import { describe, expect, it } from 'vitest';
import { parseListenAddress } from '../../src/agent/config/listen-address.js';
import { failureReasonClass } from '../../src/agent/metrics/failure-reason.js';
import { entryReadiness } from '../../src/agent/readiness.js';

describe('listen_address', () => {
  it('reads host:port, :port (every interface) and [ipv6]:port', () => {
    expect(parseListenAddress('127.0.0.1:9252')).toEqual({ host: '127.0.0.1', port: 9252 });
    expect(parseListenAddress(':9252')).toEqual({ host: undefined, port: 9252 });
    expect(parseListenAddress('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListenAddress('metrics.local:80')).toEqual({ host: 'metrics.local', port: 80 });
  });

  it('refuses what is not host:port', () => {
    for (const bad of ['9252', 'host', 'host:', 'host:70000', 'http://host:1', '::1:80', 'a b:1']) expect(parseListenAddress(bad), bad).toBeUndefined();
  });
});

describe('failure reason label', () => {
  it('maps the reasons a job fails with to a fixed set of classes', () => {
    expect(failureReasonClass('success', undefined)).toBe('none');
    expect(failureReasonClass('failed', 'exit status 3')).toBe('script_failure');
    expect(failureReasonClass('failed', 'killed by SIGKILL')).toBe('script_failure');
    expect(failureReasonClass('failed', 'execution took longer than 60 seconds')).toBe('job_execution_timeout');
    expect(failureReasonClass('failed', 'canceled')).toBe('canceled');
    expect(failureReasonClass('failed', 'the runner was stopped (forced shutdown)')).toBe('runner_shutdown');
    expect(failureReasonClass('failed', 'getting sources failed: exit status 128')).toBe('get_sources_failure');
    expect(failureReasonClass('failed', 'uploading artifacts failed: 413')).toBe('artifacts_upload_failure');
    expect(failureReasonClass('failed', 'runner error: EACCES /builds/x')).toBe('runner_system_failure');
    expect(failureReasonClass('failed', 'something new /tmp/x 123')).toBe('unknown_failure');
  });
});

describe('readiness of an entry', () => {
  const base = { name: 'r', executorOk: true, executorReason: undefined, lastStatus: 204, failures: 0 };
  it('is ready once its executor works and a job request was answered', () => {
    expect(entryReadiness(base)).toEqual({ runner: 'r', ready: true });
  });

  it('says why it is not', () => {
    expect(entryReadiness({ ...base, executorOk: undefined }).reason).toMatch(/checking whether its executor works/);
    expect(entryReadiness({ ...base, executorOk: false, executorReason: 'the docker CLI "docker" was not found' }).reason).toMatch(/executor cannot run jobs: the docker CLI/);
    expect(entryReadiness({ ...base, lastStatus: undefined }).reason).toMatch(/no answer to its first job request/);
    expect(entryReadiness({ ...base, lastStatus: 403, failures: 2 }).reason).toMatch(/refused its token \(403\).*2 in a row/);
    expect(entryReadiness({ ...base, lastStatus: -1, failures: 1 }).reason).toMatch(/does not answer/);
    expect(entryReadiness({ ...base, lastStatus: 502, failures: 1 }).reason).toMatch(/status 502/);
  });
});
