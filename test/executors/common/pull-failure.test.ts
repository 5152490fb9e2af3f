import { describe, expect, it } from 'vitest';
import { classifyPullFailure } from '../../../src/executors/common/pull-failure.js';

describe('why an image could not be pulled, as GitLab Runner 19 tells it', () => {
  it('names the registry out of reach an external dependency failure', () => {
    expect(classifyPullFailure('Error response from daemon: Get "https://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused')).toBe('runner_external_dependency_failure');
    expect(classifyPullFailure('lookup registry.invalid: no such host')).toBe('runner_external_dependency_failure');
    expect(classifyPullFailure('net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)')).toBe('runner_external_dependency_failure');
    expect(classifyPullFailure('read tcp 10.0.0.1:443: read: connection reset by peer')).toBe('runner_external_dependency_failure');
  });

  it('names a missing or denied image a configuration error, anything else an image pull failure', () => {
    expect(classifyPullFailure('manifest for alpine:nope not found: manifest unknown: manifest unknown')).toBe('runner_configuration_error');
    expect(classifyPullFailure('pull access denied for private/x, repository does not exist or may require \'docker login\'')).toBe('runner_configuration_error');
    expect(classifyPullFailure('unauthorized: authentication required')).toBe('runner_configuration_error');
    expect(classifyPullFailure('failed to register layer: no space left on device')).toBe('image_pull_failure');
  });
});
