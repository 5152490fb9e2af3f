import { describe, expect, it } from 'vitest';
import { dockerDefaults } from '../../src/executors/docker/defaults.js';
import { configFailure, configHead, firstRunner } from './config-text.js';

const HEAD = configHead('docker');

function runner(text: string) {
  const { runner: entry, warnings } = firstRunner(text);
  return { docker: entry.docker, warnings };
}

const failure = configFailure;

describe('[runners.docker]', () => {
  it('gives a docker runner without the table GitLab Runner defaults, the ones the executor has', () => {
    const { docker } = runner(HEAD);
    expect(docker).toEqual(dockerDefaults());
    expect(docker).toMatchObject({ pull_policy: ['always'], services_limit: -1, wait_for_services_timeout: 30, privileged: false, cli: 'docker' });
  });

  it('reads every key with GitLab Runner types and normalises them', () => {
    const { docker, warnings } = runner(`${HEAD}  [runners.docker]
    image = "alpine:3.20"
    pull_policy = "if-not-present"
    allowed_images = ["alpine:*", "registry.example.com/**"]
    allowed_services = ["postgres:*"]
    services = ["postgres:16", { name = "redis:7", alias = "cache", entrypoint = ["redis-server"], command = ["--port", "6380"] }]
    wait_for_services_timeout = -1
    privileged = true
    user = "1000:1000"
    disable_entrypoint_overwrite = true
    volumes = ["/srv/data:/data:ro", "/cache", "named:/named"]
    network_mode = "host"
    memory = "512m"
    memory_swap = "1g"
    cpus = 1.5
    shm_size = 268435456
    dns = ["10.0.0.53"]
    extra_hosts = ["db.local:10.0.0.5"]
    cap_add = ["NET_ADMIN"]
    cap_drop = ["MKNOD"]
    devices = ["/dev/fuse"]
    host = "unix:///run/user/1000/docker.sock"
    disable_cache = true
    cli = "podman"
    [runners.docker.tmpfs]
      "/tmp" = "rw,size=64m"
`);
    expect(warnings).toEqual([]);
    expect(docker).toMatchObject({
      image: 'alpine:3.20',
      pull_policy: ['if-not-present'],
      services: [{ name: 'postgres:16' }, { name: 'redis:7', alias: 'cache', entrypoint: ['redis-server'], command: ['--port', '6380'] }],
      wait_for_services_timeout: -1,
      privileged: true,
      user: '1000:1000',
      disable_entrypoint_overwrite: true,
      volumes: ['/srv/data:/data:ro', '/cache', 'named:/named'],
      memory: '512m',
      cpus: '1.5',
      shm_size: 268435456,
      tmpfs: { '/tmp': 'rw,size=64m' },
      host: 'unix:///run/user/1000/docker.sock',
      cli: 'podman',
    });
  });

  it('keeps a pull_policy list in order and reads 0 as the default service wait', () => {
    const { docker } = runner(`${HEAD}  [runners.docker]\n    pull_policy = ["always", "if-not-present"]\n    wait_for_services_timeout = 0\n`);
    expect(docker.pull_policy).toEqual(['always', 'if-not-present']);
    expect(docker.wait_for_services_timeout).toBe(30);
  });

  it('reads services written as [[runners.docker.services]] tables', () => {
    const { docker } = runner(`${HEAD}  [runners.docker]\n    image = "alpine"\n  [[runners.docker.services]]\n    name = "postgres:16"\n    alias = "db"\n  [[runners.docker.services]]\n    name = "redis:7"\n`);
    expect(docker.services).toEqual([{ name: 'postgres:16', alias: 'db' }, { name: 'redis:7' }]);
  });

  it('names the file and line of a wrong value and says what is expected', () => {
    const message = failure(`${HEAD}  [runners.docker]\n    image = "alpine"\n    pull_policy = "sometimes"\n`);
    expect(message).toMatch(/c\.toml:10: `runners\.docker\.pull_policy`: .*"always", "if-not-present", "never"/);
    expect(failure(`${HEAD}  [runners.docker]\n    volumes = ["data"]\n`)).toMatch(/c\.toml:9: `runners\.docker\.volumes`: .*\/host\/path:\/container\/path/);
    expect(failure(`${HEAD}  [runners.docker]\n    wait_for_services_timeout = -5\n`)).toMatch(/c\.toml:9: .*-1 \(no wait\)/);
    expect(failure(`${HEAD}  [runners.docker]\n    shm_size = "64m"\n`)).toMatch(/c\.toml:9: `runners\.docker\.shm_size`/);
    expect(failure(`${HEAD}  [runners.docker]\n    host = "/var/run/docker.sock"\n`)).toMatch(/c\.toml:9: .*DOCKER_HOST URL/);
    expect(failure(`${HEAD}  [runners.docker]\n    user = "a b"\n`)).toMatch(/c\.toml:9: `runners\.docker\.user`: .*docker run --user/);
  });

  it('points at the line of a bad key in a [[runners.docker.services]] table', () => {
    const message = failure(`${HEAD}  [runners.docker]\n    image = "alpine"\n  [[runners.docker.services]]\n    name = "postgres:16"\n  [[runners.docker.services]]\n    alias = "db"\n`);
    expect(message).toMatch(/c\.toml:12: `runners\.docker\.services\.name`: .*the service image/);
  });

  it('warns about GitLab Runner docker keys it does not use, with their line and why', () => {
    const { docker, warnings } = runner(`${HEAD}  [runners.docker]\n    image = "alpine"\n    helper_image = "x"\n    oom_kill_disable = false\n    isolation = "hyperv"\n    service_slot_cgroup_template = "ci/\${slot}"\n    helper_image_flavor = ""\n`);
    expect(docker.image).toBe('alpine');
    expect(warnings).toEqual([
      "c.toml:10: `helper_image` in [runners.docker] is ignored: ci-runner's docker executor has no helper container: get_sources, artifacts and cache run on the host",
      'c.toml:12: `isolation` in [runners.docker] is ignored: Windows containers only; ci-runner runs Linux containers',
      'c.toml:13: `service_slot_cgroup_template` in [runners.docker] is ignored: only the docker-autoscaler and instance executors have slot cgroups, and ci-runner has neither',
    ]);
  });

  it('refuses a misspelt key of ours with its line and a suggestion', () => {
    const message = failure(`${HEAD}  [runners.docker]\n    image = "alpine"\n    privilegd = true\n`);
    expect(message).toMatch(/c\.toml:10: unknown key `privilegd` in \[runners\.docker\] \(did you mean `privileged`\?\)/);
    expect(message.match(/privilegd/g)).toHaveLength(1);
  });

  it('keeps the line numbers of later runners right after services tables', () => {
    const text = `${HEAD}  [[runners.docker.services]]\n    name = "postgres"\n\n[[runners]]\n  name = "two"\n  url = "http://127.0.0.1:8080/"\n  token = "0123456789abcdef"\n  limit = -1\n`;
    expect(failure(text)).toMatch(/c\.toml:15: `runners\.limit`/);
  });
});
