/**
 * What this runner announces in `info.features` over v4 (docs/protocol-v4.md §8.3): exactly what it
 * implements, because the server hands out (or drops) jobs by it. A feature is true when the client,
 * the executor and the job runner together honour it; everything else is false, never left out.
 */
import type { FeaturesInfo } from './types.js';

/** The features for `executor` (`''` while registering: nothing runs jobs yet, so all false). */
export function runnerFeatures(executor: string): FeaturesInfo {
  const runs = executor !== '';
  // Executors that run jobs in their image, with services.
  const containers = executor === 'docker' || executor === 'kubernetes';
  return {
    variables: runs,
    image: containers,
    services: containers,
    artifacts: runs,
    cache: runs,
    // The shell executor's builds dir is shared between jobs of the runner, as GitLab Runner's.
    shared: executor === 'shell',
    upload_multiple_artifacts: runs,
    upload_raw_artifacts: runs,
    // No interactive web terminal, so no session to report.
    session: false,
    terminal: false,
    refspecs: runs,
    masking: runs,
    proxy: false,
    raw_variables: runs,
    artifacts_exclude: runs,
    // Only the script and after_script steps are run (no release step).
    multi_build_steps: false,
    // A 412 on the final update resends the whole trace from its start.
    trace_reset: runs,
    trace_checksum: runs,
    trace_size: runs,
    vault_secrets: false,
    cancelable: runs,
    return_exit_code: runs,
    // A service's own `variables:`, several aliases (`alias: "db,postgres"`), and the image's and
    // services' `docker: { user, platform }` / `kubernetes: { user }` (executors/executor-opts.ts).
    service_variables: containers,
    service_multiple_aliases: containers,
    image_executor_opts: containers,
    service_executor_opts: containers,
    fallback_cache_keys: runs,
    cancel_gracefully: runs,
  };
}
