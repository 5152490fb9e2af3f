#!/usr/bin/env bash
# prepare_exec: the job's own builds dir and the cache dir on the host, and a check that the
# sandbox starts (no user namespaces, a missing bwrap: a system failure, tried again by the runner).
source "$(dirname "$0")/base.sh"
mkdir -p "$CI_RUNNER_BWRAP_JOB_DIR/builds" "$CACHE_DIR"
if ! bwrap --ro-bind / / --dev /dev --proc /proc true; then
  echo "bubblewrap cannot start a sandbox on this host (user namespaces?)" >&2
  exit "$SYSTEM_FAILURE_EXIT_CODE"
fi
echo "Sandbox ready: $CI_RUNNER_BWRAP_JOB_DIR"
