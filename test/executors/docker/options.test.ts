/**
 * [runners.docker] keys reach the build container, and the pull policy list is tried in order with
 * clear lines. Pulls only ever go to 127.0.0.1 (a closed port stands for an unreachable registry).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerFlags, networkFlags, serviceFlags } from '../../../src/executors/docker/create-args.js';
import { dockerDefaults, dockerOptionsOf } from '../../../src/executors/docker/defaults.js';
import { containerLabelArgs } from '../../../src/executors/docker/labels.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { docker, IMAGES, skipDocker } from './engine.js';
import { runDockerJob } from './jobs.js';

const UNREACHABLE = '127.0.0.1:1/ci-runner-test/sh:1';

let t: TestServer;
let token: string;
beforeAll(async () => {
  if (skipDocker) return;
  t = await startTestServer({ files: { 'README.md': '# p\n' } });
  ({ token } = await t.registerRunner());
  await docker(['tag', IMAGES.sh, UNREACHABLE]);
});
afterAll(async () => {
  await t?.close();
});

describe('docker options', () => {
  it('maps every [runners.docker] resource key to its docker run flag', () => {
    const flags = containerFlags(
      dockerDefaults({
        privileged: true, volumes: ['/a:/b:ro', '/c'], network_mode: 'host', memory: '512m', memory_swap: '1g', cpus: '1.5', shm_size: 67108864,
        dns: ['10.0.0.1'], extra_hosts: ['db:10.0.0.2'], cap_add: ['NET_ADMIN'], cap_drop: ['ALL'], devices: ['/dev/fuse'], tmpfs: { '/scratch': 'rw,size=64m', '/t': '' },
        hostname: 'h', runtime: 'runc', memory_reservation: '256m', cgroup_parent: 'ci.slice', cpuset_cpus: '0-1', cpuset_mems: '0', cpu_shares: 512,
        dns_search: ['example.internal'], group_add: ['4321'], userns_mode: 'host', oom_kill_disable: true, oom_score_adjust: 100, security_opt: ['no-new-privileges'],
        device_cgroup_rules: ['c 1:3 mr'], gpus: 'all', volume_driver: 'local', volumes_from: ['data'], pid_mode: 'host', ipcmode: 'shareable',
        mac_address: '92:d0:c6:0a:29:33', links: ['db:database'], sysctls: { 'net.ipv4.ip_forward': '1' }, ulimit: { nofile: '1024:2048' },
      }),
    );
    expect(flags.join(' ')).toBe(
      '--privileged --volume=/a:/b:ro --volume=/c --network=host --hostname=h --memory=512m --memory-swap=1g --memory-reservation=256m ' +
        '--cgroup-parent=ci.slice --cpuset-cpus=0-1 --cpuset-mems=0 --cpus=1.5 --cpu-shares=512 --dns=10.0.0.1 --dns-search=example.internal ' +
        '--add-host=db:10.0.0.2 --runtime=runc --userns=host --shm-size=67108864 --cap-add=NET_ADMIN --cap-drop=ALL --group-add=4321 ' +
        '--oom-kill-disable --oom-score-adj=100 --security-opt=no-new-privileges --device=/dev/fuse --device-cgroup-rule=c 1:3 mr --gpus=all ' +
        '--volume-driver=local --volumes-from=data --pid=host --ipc=shareable --mac-address=92:d0:c6:0a:29:33 --link=db:database ' +
        '--tmpfs=/scratch:rw,size=64m --tmpfs=/t --sysctl=net.ipv4.ip_forward=1 --ulimit=nofile=1024:2048',
    );
  });

  it('gives services their own keys, and only the keys GitLab Runner gives them', () => {
    const o = dockerDefaults({
      memory: '1g', hostname: 'build-only', security_opt: ['build-only'], dns: ['10.0.0.1'], runtime: 'runc',
      service_memory: '256m', service_memory_swap: '512m', service_memory_reservation: '128m', service_cgroup_parent: 'svc.slice', service_cpuset_cpus: '1',
      service_cpus: '0.5', service_cpu_shares: 256, services_security_opt: ['no-new-privileges'], service_gpus: 'all', services_tmpfs: { '/var/lib/db': 'rw' },
      log_options: { 'max-size': '10m' },
    });
    expect(serviceFlags(o, { privileged: false, devices: ['/dev/fuse'], volumes: ['v:/cache'] }).join(' ')).toBe(
      '--volume=v:/cache --memory=256m --memory-swap=512m --memory-reservation=128m --cgroup-parent=svc.slice --cpuset-cpus=1 --cpus=0.5 ' +
        '--cpu-shares=256 --dns=10.0.0.1 --runtime=runc --security-opt=no-new-privileges --device=/dev/fuse --gpus=all --tmpfs=/var/lib/db:rw ' +
        '--log-driver=json-file --log-opt=max-size=10m',
    );
    expect(networkFlags(dockerDefaults({ enable_ipv6: true, network_mtu: 1400 }))).toEqual(['--ipv6', '--opt', 'com.docker.network.driver.mtu=1400']);
  });

  it('labels containers with container_labels, the job\'s variables expanded, services also under GitLab Runner\'s prefix', () => {
    const variables = [{ key: 'TEAM', value: 'platform' }];
    expect(containerLabelArgs({ team: '$TEAM-ci' }, variables, false)).toEqual(['--label=team=platform-ci']);
    expect(containerLabelArgs({ team: '$TEAM-ci' }, variables, true)).toEqual(['--label=team=platform-ci', '--label=com.gitlab.gitlab-runner.team=platform-ci']);
  });

  it('reads a loose [runners.docker] table: single strings as lists, services as strings or tables', () => {
    const o = dockerOptionsOf({ docker: { image: 'alpine', pull_policy: 'never', volumes: '/x', services: ['redis:7', { name: 'postgres', alias: 'db' }] } });
    expect(o.pull_policy).toEqual(['never']);
    expect(o.volumes).toEqual(['/x']);
    expect(o.services).toEqual([{ name: 'redis:7' }, { name: 'postgres', alias: 'db' }]);
    expect(o.cli).toBe('docker');
    expect(o.wait_for_services_timeout).toBe(30);
  });
});

describe.skipIf(skipDocker)('docker options in a job', () => {
  it('gives the build container the volumes, hosts, tmpfs, memory and capabilities configured', async () => {
    const host = await mkdtemp(join(tmpdir(), 'ci-runner-volume-'));
    await writeFile(join(host, 'shared.txt'), 'from the host volume\n');
    const script = [
      'j:',
      '  script:',
      '    - cat /mnt/shared/shared.txt',
      '    - grep -q "10.9.8.7.*dbhost" /etc/hosts && echo extra host ok',
      '    - grep -q " /scratch tmpfs" /proc/mounts && echo tmpfs ok',
      '    - test -d /anon && echo anonymous volume ok',
      '    - if touch /mnt/shared/new 2>/dev/null; then echo volume writable; else echo volume read-only; fi',
      '    - cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes',
      '    - if chown nobody /tmp 2>/dev/null; then echo chown allowed; else echo chown refused; fi',
      '',
    ].join('\n');
    const { status, trace } = await runDockerJob(t, token, script, {
      docker: { volumes: [`${host}:/mnt/shared:ro`, '/anon'], extra_hosts: ['dbhost:10.9.8.7'], tmpfs: { '/scratch': 'rw,size=16m' }, memory: '256m', cap_drop: ['CHOWN'] },
    });
    expect(status, trace).toBe('success');
    for (const line of ['from the host volume', 'extra host ok', 'tmpfs ok', 'anonymous volume ok', 'volume read-only', String(256 * 1024 * 1024), 'chown refused']) expect(trace).toContain(line);
  });

  it('tries the pull policies in order: a failed pull falls back to the local image', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  image: ${UNREACHABLE}\n  script:\n    - echo ran\n`, { docker: { pull_policy: ['always', 'if-not-present'] } });
    expect(status, trace).toBe('success');
    expect(trace).toContain(`Pulling docker image ${UNREACHABLE} ...`);
    expect(trace).toContain(`Using docker image ${UNREACHABLE} with ID sha256:`);
  });

  it('fails saying what each policy found when nothing works', async () => {
    const { status, trace } = await runDockerJob(t, token, 'j:\n  image: 127.0.0.1:1/nothing/here:1\n  script:\n    - echo never\n', { docker: { pull_policy: ['if-not-present'] } });
    expect(status).toBe('failed');
    expect(trace).toMatch(/could not get image "127\.0\.0\.1:1\/nothing\/here:1": pull_policy = if-not-present: pull failed: .*connection refused/);
  });

  it('talks to the engine that host names (DOCKER_HOST), and fails clearly when it does not answer', async () => {
    const ok = await runDockerJob(t, token, 'j:\n  script:\n    - echo through the socket\n', { docker: { host: 'unix:///var/run/docker.sock' } });
    expect(ok.status, ok.trace).toBe('success');
    const { status, trace } = await runDockerJob(t, token, 'j:\n  script:\n    - echo never\n', { docker: { host: 'unix:///nonexistent/docker.sock' } });
    expect(status).toBe('failed');
    expect(trace).toContain('unix:///nonexistent/docker.sock');
    expect(trace).not.toContain('$ echo never');
  });
});
