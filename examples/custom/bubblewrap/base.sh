#!/usr/bin/env bash
# Shared by the bubblewrap driver's programs: where a job's sandbox keeps its files on the host.
# CI_RUNNER_BWRAP_ROOT (default /var/lib/ci-runner-bwrap) holds one dir per job, named after the
# runner's short token, the project and the job id, so concurrent jobs never share one.
set -euo pipefail
ROOT="${CI_RUNNER_BWRAP_ROOT:-/var/lib/ci-runner-bwrap}"
JOB_DIR="$ROOT/${CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN:-runner}-${CUSTOM_ENV_CI_PROJECT_ID:-0}-${CUSTOM_ENV_CI_JOB_ID:-0}"
# The cache outlives jobs: one dir per project, shared by its jobs.
CACHE_DIR="$ROOT/cache"
