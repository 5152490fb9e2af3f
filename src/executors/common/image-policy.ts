/**
 * The runner's limits on what a job may ask of a container executor, as GitLab Runner 19 applies them
 * (its `common/allowed_images.go`, the docker executor's privileged and user checks,
 * `helpers/pull_policies`), with its messages: which images and services (`allowed_images`,
 * `allowed_services`), which pull policies (`allowed_pull_policies`), which images may run privileged
 * (`allowed_privileged_images`, `allowed_privileged_services`) and as which user (`allowed_users`).
 * The docker and kubernetes executors share it. Globs are GitLab Runner's (doublestar): `*` stops at
 * `/`, `**` does not.
 */
import picomatch from 'picomatch';
import { ExecutorSetupError } from '../types.js';

/** GitLab Runner's pull policies. */
export type PullPolicy = 'always' | 'if-not-present' | 'never';

const matches = (glob: string, image: string): boolean => picomatch.isMatch(image, glob, { dot: true });

export interface AllowedImageCheck {
  image: string;
  /** `images` or `services`, as the lines name the list. */
  list: 'images' | 'services';
  /** Globs; empty allows every image. */
  allowed: readonly string[];
  /** Images the runner's own config names (its default image, its services): always allowed. */
  internal: readonly string[];
  /** Writes one line to the job log. */
  log: (line: string) => void;
}

/**
 * Refuses an image no glob of `allowed` matches (unless the runner's config names it), after writing
 * GitLab Runner's lines about it to the job log; an empty list allows anything.
 */
export function verifyAllowedImage(check: AllowedImageCheck): void {
  const { image, allowed } = check;
  if (allowed.length === 0 || allowed.some((glob) => matches(glob, image)) || check.internal.includes(image)) return;
  check.log('');
  check.log(`\x1b[31;1mERROR: The "${image}" image is not present on list of allowed ${check.list}:\x1b[0;m`);
  for (const glob of allowed) check.log(`- ${glob}`);
  check.log('');
  check.log("Please check runner's allowed_images configuration: https://docs.gitlab.com/runner/configuration/advanced-configuration/");
  throw new ExecutorSetupError('IMAGE_NOT_ALLOWED', `disallowed image: "${image}" is not on the runner's allowed_${check.list}`);
}

/** Whether `image` may run privileged: any image when the list is empty, else one its globs match. */
export function privilegedAllowed(image: string, allowedPrivileged: readonly string[]): boolean {
  return allowedPrivileged.length === 0 || allowedPrivileged.some((glob) => matches(glob, image));
}

export interface PullPolicyCheck {
  image: string;
  /** The job's own for this image or service (`pull_policy:`), if it names any. */
  job: readonly PullPolicy[] | undefined;
  /** The runner's `pull_policy` (its default `always` when unset). */
  runner: readonly PullPolicy[];
  /** The runner's `allowed_pull_policies`; empty means the runner's `pull_policy`. */
  allowed: readonly PullPolicy[];
}

/**
 * The pull policies to try for an image: the job's (else the runner's) that are allowed, in their order;
 * none of them allowed fails the job with GitLab Runner's message naming where the policies came from.
 */
export function effectivePullPolicies(check: PullPolicyCheck): PullPolicy[] {
  const runner = check.runner.length > 0 ? check.runner : (['always'] as const);
  const wanted = check.job && check.job.length > 0 ? check.job : runner;
  const allowed = check.allowed.length > 0 ? check.allowed : runner;
  const effective = wanted.filter((policy) => allowed.includes(policy));
  if (effective.length > 0) return effective;
  const source = check.job && check.job.length > 0 ? 'GitLab pipeline config' : check.runner.length > 0 ? 'Runner config' : 'Runner config (default)';
  throw new ExecutorSetupError(
    'PULL_POLICY_NOT_ALLOWED',
    `invalid pull policy for image "${check.image}": pull_policy (${goList(wanted)}) defined in ${source} is not one of the allowed_pull_policies (${goList(allowed)})`,
  );
}

/**
 * Refuses a user the runner does not allow (the docker executor's rule): the image's own user (none
 * asked for) is always allowed; with neither `allowed_users` nor `user` set any is; without
 * `allowed_users`, only the runner's `user` is.
 */
export function verifyAllowedUser(user: string | undefined, allowedUsers: readonly string[], runnerUser: string | undefined): void {
  if (!user) return;
  if (allowedUsers.length === 0 && !runnerUser) return;
  const allowed = allowedUsers.length > 0 ? allowedUsers : [runnerUser ?? ''];
  if (allowed.includes(user)) return;
  throw new ExecutorSetupError('USER_NOT_ALLOWED', `user "${user}" is not an allowed user: ${goList(allowedUsers)}`);
}

/** A list as Go's `%v` prints it: `[a b]`. */
function goList(items: readonly string[]): string {
  return `[${items.join(' ')}]`;
}
