#!/usr/bin/env bash
# config_exec: where the job's files are inside the sandbox, and the driver's name for the job log.
source "$(dirname "$0")/base.sh"
cat <<JSON
{
  "builds_dir": "/tmp/builds",
  "cache_dir": "/tmp/cache",
  "builds_dir_is_shared": false,
  "hostname": "bubblewrap-$(hostname)",
  "driver": { "name": "bubblewrap", "version": "$(bwrap --version | awk '{print $2}')" },
  "job_env": { "CI_RUNNER_BWRAP_JOB_DIR": "$JOB_DIR" }
}
JSON
