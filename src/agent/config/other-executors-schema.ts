/**
 * The tables of GitLab Runner's executors that ci-runner does not have: `[runners.ssh]`,
 * `[runners.parallels]`, `[runners.virtualbox]`, `[runners.machine]` (docker+machine),
 * `[runners.autoscaler]` (docker-autoscaler, instance) and `[runners.instance]`. An entry whose
 * `executor` is one of them is refused (runner-schema.ts); a table of theirs beside another executor
 * does nothing in GitLab Runner either, so it is ignored with a warning when set. Each of GitLab Runner
 * 19's keys has a status here (keys.ts).
 */
import { warnedTable, type KeyTable } from './keys.js';

/** Why a table of executors ci-runner lacks is ignored. */
export function absentExecutor(...executors: string[]): string {
  const names = executors.length === 1 ? `${executors[0]} executor` : `${executors.slice(0, -1).join(', ')} and ${executors.at(-1)} executors`;
  return `read by GitLab Runner's ${names} only; ci-runner has ${executors.length === 1 ? 'no such executor' : 'none of them'}`;
}

const ssh = absentExecutor('ssh', 'parallels', 'virtualbox');
const machine = absentExecutor('docker+machine');
const autoscaler = absentExecutor('docker-autoscaler', 'instance');

const connector = (reason: string): KeyTable =>
  warnedTable(reason, ['os', 'arch', 'protocol', 'protocol_port', 'username', 'password', 'key_path', 'use_static_credentials', 'keepalive', 'timeout', 'use_external_addr']);

const autoscalerPolicy = warnedTable(autoscaler, ['periods', 'timezone', 'idle_count', 'idle_time', 'scale_factor', 'scale_factor_limit', 'preemptive_mode']);

/** Each table with the reason its key in `[[runners]]` is ignored. */
export const OTHER_EXECUTOR_TABLES = {
  ssh: {
    reason: ssh,
    table: warnedTable(ssh, ['user', 'password', 'host', 'port', 'identity_file', 'disable_strict_host_key_checking', 'known_hosts_file']),
  },
  parallels: {
    reason: absentExecutor('parallels'),
    table: warnedTable(absentExecutor('parallels'), ['base_name', 'template_name', 'disable_snapshots', 'time_server', 'allowed_images']),
  },
  virtualbox: {
    reason: absentExecutor('virtualbox'),
    table: warnedTable(absentExecutor('virtualbox'), ['base_name', 'base_snapshot', 'base_folder', 'disable_snapshots', 'allowed_images', 'start_type']),
  },
  machine: {
    reason: machine,
    table: warnedTable(
      machine,
      [
        'MaxGrowthRate', 'IdleCount', 'IdleScaleFactor', 'IdleCountMin', 'IdleTime', 'MaxBuilds', 'MachineDriver', 'MachineName', 'MachineOptions',
        'MachineOptionsWithName', 'MaxRemovalAttempts', 'OffPeakPeriods', 'OffPeakTimezone', 'OffPeakIdleCount', 'OffPeakIdleTime',
      ],
      { autoscaling: warnedTable(machine, ['Periods', 'Timezone', 'IdleCount', 'IdleScaleFactor', 'IdleCountMin', 'IdleTime']) },
    ),
  },
  autoscaler: {
    reason: autoscaler,
    table: warnedTable(
      autoscaler,
      [
        'capacity_per_instance', 'max_use_count', 'max_instances', 'plugin', 'plugin_config', 'instance_ready_command', 'instance_acquire_timeout',
        'update_interval', 'update_interval_when_expecting', 'deletion_retry_interval', 'shutdown_deletion_interval', 'shutdown_deletion_retries',
        'failure_threshold', 'reservation_throttling', 'log_internal_ip', 'log_external_ip', 'delete_instances_on_shutdown',
        'instance_operation_time_buckets', 'instance_creation_time_buckets', 'instance_is_running_time_buckets', 'instance_deletion_time_buckets',
        'instance_readiness_time_buckets', 'instance_life_duration_buckets',
      ],
      {
        connector_config: connector(autoscaler),
        policy: autoscalerPolicy,
        scale_throttle: warnedTable(autoscaler, ['limit', 'burst']),
        state_storage: warnedTable(autoscaler, ['enabled', 'dir', 'keep_instance_with_acquisitions']),
        vm_isolation: warnedTable(autoscaler, ['enabled', 'nesting_host', 'nesting_config', 'image'], { connector_config: connector(autoscaler) }),
      },
    ),
  },
  instance: {
    reason: absentExecutor('instance'),
    table: warnedTable(absentExecutor('instance'), ['allowed_images', 'use_common_build_dir']),
  },
} as const;
