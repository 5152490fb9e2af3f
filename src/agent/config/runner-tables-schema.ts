/**
 * The smaller tables of a `[[runners]]` entry that ci-runner does not read (yet): `[runners.artifact]`, `[runners.referees]`, `[runners.monitoring]`, `[runners.experimental]`, as key
 * tables (keys.ts) with the reason each is ignored. runner-schema.ts places them.
 */
import { warnedTable } from './keys.js';

const NOT_YET = 'ci-runner does not apply it yet';
const REFEREES = "ci-runner sends GitLab no referee data (Prometheus metrics of the job's machine)";
const MONITORING = 'ci-runner does not count jobs that waited in the queue past a threshold (gitlab_runner_acceptable_job_queuing_duration_exceeded_total)';
const EXPERIMENTAL = 'ci-runner runs no start-up canary job';

export const RUNNER_TABLES = {
  artifact: warnedTable(NOT_YET, ['upload_timeout', 'response_header_timeout']),
  referees: { reason: REFEREES, table: warnedTable(REFEREES, [], { metrics: warnedTable(REFEREES, ['prometheus_address', 'query_interval', 'queries']) }) },
  monitoring: {
    reason: MONITORING,
    table: warnedTable(MONITORING, [], { job_queuing_durations: warnedTable(MONITORING, ['periods', 'timezone', 'threshold', 'jobs_running_for_project']) }),
  },
  experimental: {
    reason: EXPERIMENTAL,
    table: warnedTable(EXPERIMENTAL, [], { boot_verify: warnedTable(EXPERIMENTAL, ['enabled', 'timeout', 'acquire_min_backoff', 'acquire_max_backoff']) }),
  },
  /** GitLab Runner names cgroups after the autoscaler's slots (docker-autoscaler, instance). */
  slotCgroups: 'only the docker-autoscaler and instance executors have slot cgroups, and ci-runner has neither',
} as const;
