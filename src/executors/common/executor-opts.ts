/**
 * An image's or service's `executor_opts` (`.gitlab-ci.yml`'s `docker: { user, platform }` and
 * `kubernetes: { user }`), expanded against the job's variables as GitLab Runner 19 expands them, and
 * checked before they reach a command line or a pod spec: a user is `name|uid[:group|gid]`, a platform
 * `os/arch[/variant]`; kubernetes takes numbers only (`runAsUser`/`runAsGroup`).
 */
import type { ExecutorOpts } from '../../protocol/types.js';
import { expandString } from '../../util/expand.js';
import { ExecutorSetupError } from '../types.js';
import type { ExportedVariable } from '../types.js';

const DOCKER_USER = /^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/;
const PLATFORM = /^[a-z0-9]+\/[a-z0-9_]+(\/[a-z0-9]+)?$/;

function expand(value: string | undefined, variables: readonly ExportedVariable[]): string | undefined {
  if (value === undefined) return undefined;
  const expanded = expandString(value, (name) => variables.findLast((v) => v.key === name)?.value ?? '').trim();
  return expanded === '' ? undefined : expanded;
}

/** `docker: { user, platform }` of `what` (`image`, `service redis`), expanded and checked. */
export function dockerOpts(opts: ExecutorOpts | undefined, variables: readonly ExportedVariable[], what: string): { user?: string; platform?: string } {
  const user = expand(opts?.docker?.user, variables);
  const platform = expand(opts?.docker?.platform, variables);
  if (user !== undefined && !DOCKER_USER.test(user)) throw new ExecutorSetupError('BAD_EXECUTOR_OPTS', `the ${what}'s docker user "${user}" is not a user name or uid, optionally with :group`);
  if (platform !== undefined && !PLATFORM.test(platform)) throw new ExecutorSetupError('BAD_EXECUTOR_OPTS', `the ${what}'s docker platform "${platform}" is not os/arch[/variant] (linux/amd64, linux/arm64/v8)`);
  return { ...(user !== undefined ? { user } : {}), ...(platform !== undefined ? { platform } : {}) };
}

/** `kubernetes: { user }` of `what` as runAsUser and runAsGroup (GitLab Runner: `uid[:gid]`, numbers). */
export function kubernetesUser(opts: ExecutorOpts | undefined, variables: readonly ExportedVariable[], what: string): { runAsUser?: number; runAsGroup?: number } {
  const user = expand(opts?.kubernetes?.user, variables);
  if (user === undefined) return {};
  const match = /^(\d{1,10})(?::(\d{1,10}))?$/.exec(user);
  if (!match) throw new ExecutorSetupError('BAD_EXECUTOR_OPTS', `the ${what}'s kubernetes user "${user}" is not uid[:gid] (numbers, as Kubernetes' runAsUser and runAsGroup take them)`);
  return { runAsUser: Number(match[1]), ...(match[2] !== undefined ? { runAsGroup: Number(match[2]) } : {}) };
}
