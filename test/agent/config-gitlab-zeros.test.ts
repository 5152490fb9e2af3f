import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/agent/config/index.js';

/** A config.toml laid out the way GitLab Runner's `register` writes one: zero values included. */
const WRITTEN_BY_GITLAB_RUNNER = `concurrent = 1
check_interval = 0
connection_max_age = "15m0s"
shutdown_timeout = 0

[session_server]
  session_timeout = 1800

[[runners]]
  name = "build-box"
  url = "http://127.0.0.1:8080/"
  id = 12
  token = "0123456789abcdef"
  token_obtained_at = 2026-04-20T13:10:41Z
  token_expires_at = 0001-01-01T00:00:00Z
  executor = "docker"
  limit = 0
  output_limit = 0
  request_concurrency = 0
  [runners.custom_build_dir]
  [runners.cache]
    MaxUploadedArchiveSize = 0
    [runners.cache.s3]
    [runners.cache.gcs]
  [runners.feature_flags]
  [runners.docker]
    tls_verify = false
    image = "alpine:3.20"
    privileged = false
    disable_entrypoint_overwrite = false
    oom_kill_disable = false
    disable_cache = false
    volumes = ["/cache"]
    shm_size = 0
    network_mtu = 0
    wait_for_services_timeout = 0
`;

describe('a config.toml written by GitLab Runner', () => {
  it('reads its zero values as the defaults they stand for', () => {
    const { config } = parseConfig(WRITTEN_BY_GITLAB_RUNNER, 'config.toml');
    const runner = config.runners[0]!;
    expect(runner.request_concurrency).toBe(1);
    expect(config.shutdown_timeout).toBe(30);
    expect(config.check_interval).toBe(3);
    expect(runner.limit).toBe(0);
    expect(runner.output_limit).toBe(4096);
    expect(runner.docker.wait_for_services_timeout).toBe(30);
    expect(runner.docker.shm_size).toBeUndefined();
  });

  it('reads a negative request_concurrency as 1, as GitLab Runner does', () => {
    const text = WRITTEN_BY_GITLAB_RUNNER.replace('request_concurrency = 0', 'request_concurrency = -1');
    expect(parseConfig(text, 'config.toml').config.runners[0]!.request_concurrency).toBe(1);
  });

  it('warns only about the settings it ignores that are set, not about their zero values', () => {
    const { warnings } = parseConfig(WRITTEN_BY_GITLAB_RUNNER, 'config.toml');
    expect(warnings.map((w) => w.replace(/^config\.toml:\d+: /, ''))).toEqual([
      '`session_server` is ignored: ci-runner has no interactive web terminal, so no session server',
    ]);
    const set = parseConfig(WRITTEN_BY_GITLAB_RUNNER.replace('tls_verify = false', 'isolation = "process"'), 'config.toml');
    expect(set.warnings.join('\n')).toMatch(/`isolation` in \[runners\.docker\] is ignored/);
  });
});
