/**
 * GitLab Runner 19's `[runners.docker]` keys reach a real engine's containers as GitLab Runner applies
 * them: the build container's keys, the services' keys, the job network's, and the volumes a
 * container path alone stands for (kept per project, per job with disable_cache, under cache_dir).
 */
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runnerLabel } from '../../../src/executors/docker/labels.js';
import { waitUntil } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { docker, IMAGES, skipDocker } from './engine.js';
import { runDockerJob, startDockerJob, useDockerTestServer } from './jobs.js';

let t: TestServer;
let token: string;
useDockerTestServer((server, runnerToken) => {
  t = server;
  token = runnerToken;
});

/** The runner's volumes, by label. */
async function volumes(...labels: string[]): Promise<string[]> {
  const filters = [`label=com.ci-runner.runner=${runnerLabel(token)}`, ...labels].flatMap((label) => ['--filter', label]);
  return (await docker(['volume', 'ls', '--quiet', ...filters])).split('\n').filter(Boolean);
}

describe.skipIf(skipDocker)('[runners.docker] keys in a job', () => {
  it('gives the build container hostname, DNS search, sysctls, ulimits, groups, OOM score, security options and resource weights', async () => {
    const script = [
      'hostname',
      'grep search /etc/resolv.conf',
      'cat /proc/sys/net/ipv4/ip_unprivileged_port_start',
      'echo "nofile $(ulimit -n) $(ulimit -Hn)"',
      'echo "groups $(id -G)"',
      'echo "oom $(cat /proc/self/oom_score_adj)"',
      'grep NoNewPrivs /proc/self/status',
      'echo "shares $(cat /sys/fs/cgroup/cpu/cpu.shares 2>/dev/null || cat /sys/fs/cgroup/cpu.weight)"',
      'echo "soft $(cat /sys/fs/cgroup/memory/memory.soft_limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.low)"',
    ].map((line) => `    - ${JSON.stringify(line)}`);
    const { status, trace } = await runDockerJob(t, token, `j:\n  script:\n${script.join('\n')}\n`, {
      docker: {
        hostname: 'build-host', dns_search: ['example.internal'], sysctls: { 'net.ipv4.ip_unprivileged_port_start': '80' }, ulimit: { nofile: '1234:2345' },
        group_add: ['4321'], oom_score_adjust: 321, security_opt: ['no-new-privileges'], cpu_shares: 512, memory_reservation: '64m',
      },
    });
    expect(status, trace).toBe('success');
    for (const line of ['\nbuild-host\n', 'search example.internal', '\n80\n', 'nofile 1234 2345', 'groups 0 4321', 'oom 321', 'NoNewPrivs:\t1', 'soft 67108864']) expect(trace).toContain(line);
    expect(trace).toMatch(/shares (512|20)\n/);
  }, 90_000);

  it('labels every container of the job with container_labels, the job\'s variables expanded', async () => {
    const job = await startDockerJob(t, token, 'j:\n  variables:\n    TEAM: platform\n  script:\n    - sleep 5\n', { docker: { container_labels: { 'com.example.team': '$TEAM', 'com.example.fixed': 'yes' } } });
    let found = '';
    await waitUntil(async () => {
      found = await docker(['ps', '--filter', `label=com.ci-runner.job=${job.id}`, '--filter', 'label=com.example.team=platform', '--format', '{{.Label "com.example.fixed"}}']);
      return found !== '';
    }, 30_000, 'the build container with the labels');
    expect(found).toBe('yes');
    expect((await job.done).status).toBe('success');
  }, 60_000);

  it('gives services their keys: tmpfs, security options and their own environment', async () => {
    const yaml = `j:\n  script:\n    - echo build ran\n`;
    const command = 'grep NoNewPrivs /proc/self/status; grep " /data tmpfs" /proc/mounts >/dev/null && echo "tmpfs ok"; echo "env $SVC_MODE"; exec sleep 600';
    const { trace } = await runDockerJob(t, token, yaml, {
      docker: {
        wait_for_services_timeout: 1, services_security_opt: ['no-new-privileges'], services_tmpfs: { '/data': 'rw' },
        services: [{ name: IMAGES.nolisten, command: ['sh', '-c', command], environment: ['SVC_MODE=replica'] }],
      },
    });
    const service = trace.split('Waited for services')[0] ?? '';
    expect(service).toContain('NoNewPrivs:\t1');
    expect(service).toContain('tmpfs ok');
    expect(service).toContain('env replica');
    expect(trace).toContain('build ran');
  }, 60_000);

  it('fails a job whose preparation outlasts prepare_timeout, as timed out, with GitLab Runner\'s words', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  services:\n    - ${IMAGES.nolisten}\n  script:\n    - echo never\n`, {
      docker: { wait_for_services_timeout: 120 },
      runner: { prepare_timeout: '3s' },
    });
    expect(status).toBe('failed');
    expect(trace).toContain('ERROR: Job failed: prepare timeout: exceeded timeout of 3s');
  }, 60_000);

  it('sets the MTU of the network made for a job with services', async () => {
    const { status, trace } = await runDockerJob(t, token, `j:\n  services:\n    - ${IMAGES.httpd}\n  script:\n    - cat /sys/class/net/eth0/mtu\n`, { docker: { network_mtu: 1400 } });
    expect(status, trace).toBe('success');
    expect(trace).toContain('\n1400\n');
  }, 60_000);

  it('keeps a container-path volume from job to job of the project, as GitLab Runner\'s cache volume', async () => {
    const write = await runDockerJob(t, token, 'j:\n  script:\n    - echo kept > /keep/file\n', { docker: { volumes: ['/keep'] } });
    expect(write.status, write.trace).toBe('success');
    const read = await runDockerJob(t, token, 'j:\n  script:\n    - cat /keep/file\n', { docker: { volumes: ['/keep'] }, dirs: write.dirs });
    expect(read.status, read.trace).toBe('success');
    expect(read.trace).toContain('\nkept\n');
    const kept = await volumes('label=com.ci-runner.volume=cache', 'label=com.ci-runner.destination=/keep');
    expect(kept.length).toBeGreaterThan(0);
    await docker(['volume', 'rm', ...kept]);
  }, 90_000);

  it('with disable_cache gives each job its own volume, shared by its stages and removed after it', async () => {
    const yaml = 'j:\n  script:\n    - test ! -e /scratch/file && echo fresh\n    - echo mine > /scratch/file\n  after_script:\n    - cat /scratch/file\n';
    const first = await runDockerJob(t, token, yaml, { docker: { volumes: ['/scratch'], disable_cache: true } });
    expect(first.status, first.trace).toBe('success');
    expect(first.trace).toContain('fresh');
    expect(first.trace).toContain('\nmine\n');
    const second = await runDockerJob(t, token, yaml, { docker: { volumes: ['/scratch'], disable_cache: true }, dirs: first.dirs });
    expect(second.trace).toContain('fresh');
    expect(await volumes('label=com.ci-runner.volume=temporary')).toEqual([]);
  }, 90_000);

  it('keeps the job\'s own volumes with volume_keep', async () => {
    const job = await runDockerJob(t, token, 'j:\n  script:\n    - echo x > /scratch/file\n', { docker: { volumes: ['/scratch'], disable_cache: true, volume_keep: true } });
    expect(job.status, job.trace).toBe('success');
    const kept = await volumes('label=com.ci-runner.volume=temporary', 'label=com.ci-runner.destination=/scratch');
    expect(kept.length).toBeGreaterThan(0);
    await docker(['volume', 'rm', ...kept]);
  }, 60_000);

  it('puts container-path volumes under cache_dir on the host when it is set', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-docker-cache-'));
    const job = await runDockerJob(t, token, 'j:\n  script:\n    - echo on the host > /keep/file\n', { docker: { volumes: ['/keep'], cache_dir: dir } });
    expect(job.status, job.trace).toBe('success');
    const [project] = await readdir(dir);
    const [hashed] = await readdir(join(dir, project ?? ''));
    expect(await readFile(join(dir, project ?? '', hashed ?? '', 'file'), 'utf8')).toBe('on the host\n');
  }, 60_000);
});
