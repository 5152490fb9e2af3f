/**
 * Images that run as a user of their own (`USER 1000:1000`, `USER node`). The script runs as that
 * user, as with GitLab Runner, but the checkout, the job's script and its file variables were written
 * by the runner on the host: before each build stage a short root container hands them to the image's
 * uid:gid, and after it hands them back to the runner's (git refuses a repository of another owner,
 * and a runner that is not root could not clean or archive them otherwise). GitLab Runner does the
 * same under FF_DISABLE_UMASK_FOR_DOCKER_EXECUTOR (its default, `umask 0000`, makes every file
 * world-writable instead).
 */
import { ExecutorSetupError } from '../types.js';
import type { DockerCli } from './cli.js';

export interface Ids {
  uid: number;
  gid: number;
}

/** The uid:gid scripts run as under `user` (the image's USER or `[runners.docker] user`); undefined for root. */
export async function imageUser(docker: DockerCli, image: string, user: string, labels: string[], signal: AbortSignal): Promise<Ids | undefined> {
  const uidPart = user.split(':')[0] ?? '';
  if (uidPart === '' || uidPart === '0' || uidPart === 'root') return undefined;
  // Names (and groups) only mean something inside the image: ask it, as the user, like GitLab Runner.
  let probed: string | undefined;
  try {
    probed = await docker.run(['run', '--rm', ...labels, '--network', 'none', '--user', user, '--entrypoint', '/bin/sh', image, '-c', 'id -u && id -g'], { signal });
  } catch {
    signal.throwIfAborted();
  }
  const ids = /^(\d+)\s+(\d+)$/.exec(probed ?? '') ?? /^(\d+)(?::(\d+))?$/.exec(user);
  if (!ids?.[1]) throw new ExecutorSetupError('IMAGE_USER', `cannot tell which uid the user "${user}" is: \`id -u\` and \`id -g\` did not run in ${image}`);
  const uid = Number(ids[1]);
  return uid === 0 ? undefined : { uid, gid: Number(ids[2] ?? 0) };
}

export interface ChownRequest {
  image: string;
  /** Labels etc., so a leftover container is found and removed with the job's. */
  labels: string[];
  /** Host dir → its path in the container. */
  dirs: Array<[host: string, container: string]>;
  to: Ids;
  signal?: AbortSignal;
}

/**
 * `chown -R -h` the dirs in a root container of the image, whatever the image's USER and ENTRYPOINT.
 * `-h`: a link a job left in the checkout is changed itself, never what it points at (GNU chown and
 * busybox built with DESKTOP do that for -R anyway; other busybox builds follow links without it).
 */
export async function chownInImage(docker: DockerCli, r: ChownRequest): Promise<void> {
  const volumes = r.dirs.flatMap(([host, inContainer]) => ['--volume', `${host}:${inContainer}`]);
  const args = ['run', '--rm', ...r.labels, '--network', 'none', '--user', '0', ...volumes, '--entrypoint', '/bin/sh', r.image];
  await docker.run([...args, '-c', 'chown -R -h "$0" "$@"', `${r.to.uid}:${r.to.gid}`, ...r.dirs.map(([, inContainer]) => inContainer)], r.signal ? { signal: r.signal } : {});
}
