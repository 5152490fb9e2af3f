/**
 * What this runner announces in `info.features` over v4 (docs/protocol-v4.md §8.3), as one table of
 * every feature GitLab Runner 19.3 sends (common/network.go's FeaturesInfo): exactly what it
 * implements, because the server hands out (or drops, `runner_unsupported`) jobs by it. A feature is
 * true when the client, the executor and the job runner together honour it; everything else is false,
 * never left out, with the reason in the table.
 */
import { honoured, warned, type Support } from '../../util/compat.js';
import type { FeaturesInfo } from './types.js';

type Executor = string;

export interface FeatureEntry {
  /** True for jobs of this executor (`''` while registering: nothing runs jobs yet). */
  readonly announced: (executor: Executor) => boolean;
  readonly support: Support;
}

const runs = (executor: Executor): boolean => executor !== '';
/** Executors that run jobs in their image, with services. */
const containers = (executor: Executor): boolean => executor === 'docker' || executor === 'kubernetes';
const never = (): boolean => false;

const entry = (announced: (executor: Executor) => boolean, support: Support): FeatureEntry => ({ announced, support });

/** Every feature of GitLab Runner 19.3's FeaturesInfo, in its order. */
export const FEATURES = {
  variables: entry(runs, honoured()),
  image: entry(containers, honoured('docker and kubernetes')),
  services: entry(containers, honoured('docker and kubernetes')),
  artifacts: entry(runs, honoured()),
  cache: entry(runs, honoured()),
  fallback_cache_keys: entry(runs, honoured()),
  // The shell executor's builds dir is shared between jobs of the runner, as GitLab Runner's.
  shared: entry((executor) => executor === 'shell', honoured('the shell executor')),
  upload_multiple_artifacts: entry(runs, honoured()),
  upload_raw_artifacts: entry(runs, honoured()),
  session: entry(never, warned('no interactive web terminal, so no session to report')),
  terminal: entry(never, warned('no interactive web terminal')),
  refspecs: entry(runs, honoured()),
  masking: entry(runs, honoured()),
  proxy: entry(never, warned('no session server to proxy services through')),
  raw_variables: entry(runs, honoured()),
  artifacts_exclude: entry(runs, honoured()),
  multi_build_steps: entry(runs, honoured('every step of the payload runs as its own stage, release included')),
  // A 412 on the final update resends the whole trace from its start.
  trace_reset: entry(runs, honoured()),
  trace_checksum: entry(runs, honoured()),
  trace_size: entry(runs, honoured()),
  vault_secrets: entry(never, warned('no external secrets providers')),
  cancelable: entry(runs, honoured()),
  return_exit_code: entry(runs, honoured()),
  // A service's own `variables:`, several aliases (`alias: "db,postgres"`), and the image's and
  // services' `docker: { user, platform }` / `kubernetes: { user }` (executors/common/executor-opts.ts).
  service_variables: entry(containers, honoured('docker and kubernetes')),
  service_multiple_aliases: entry(containers, honoured('docker and kubernetes')),
  image_executor_opts: entry(containers, honoured('docker and kubernetes')),
  service_executor_opts: entry(containers, honoured('docker and kubernetes')),
  cancel_gracefully: entry(runs, honoured()),
  native_steps_integration: entry(never, warned('no step-runner: a job with `run:` (CI steps) fails, naming them')),
  two_phase_job_commit: entry(never, warned('jobs are started at once, without the acknowledgement of GitLab 18\'s two-phase commit')),
  job_inputs: entry(never, warned('job inputs are not interpolated')),
} as const satisfies Record<keyof FeaturesInfo, FeatureEntry>;

/** The features for `executor` (`''` while registering: nothing runs jobs yet, so all false). */
export function runnerFeatures(executor: Executor): FeaturesInfo {
  const features = {} as Record<keyof FeaturesInfo, boolean>;
  for (const [name, entry] of Object.entries(FEATURES) as Array<[keyof FeaturesInfo, FeatureEntry]>) features[name] = entry.announced(executor);
  return features;
}
