#!/usr/bin/env bash
# run_exec <script> <stage>: the stage's script in a sandbox: the host's system read-only, the job's
# /builds and the project's /cache writable, its own /tmp, /proc and PID namespace; it dies with the
# driver (the runner's SIGTERM/SIGKILL reach it). The helper commands the cache and artifacts stages
# call are `gitlab-runner`: GitLab Runner's binary if the host has one, else ci-runner under that name.
source "$(dirname "$0")/base.sh"
script="$1"
helper_dir="$(mktemp -d)"
trap 'rm -rf "$helper_dir"' EXIT
if ! command -v gitlab-runner >/dev/null 2>&1; then
  ci_runner="${CI_RUNNER_BIN:-$(command -v ci-runner || true)}"
  if [ -n "$ci_runner" ]; then printf '#!/bin/sh\nexec %s "$@"\n' "$ci_runner" > "$helper_dir/gitlab-runner"; chmod +x "$helper_dir/gitlab-runner"; fi
fi
set +e
bwrap \
  --ro-bind / / \
  --dev /dev --proc /proc --tmpfs /tmp \
  --bind "$CI_RUNNER_BWRAP_JOB_DIR/builds" /tmp/builds \
  --bind "$CACHE_DIR" /tmp/cache \
  --ro-bind "$script" /tmp/stage-script \
  --ro-bind "$helper_dir" /tmp/helpers \
  --setenv PATH "/tmp/helpers:$PATH" \
  --setenv HOME /tmp/builds \
  --setenv TMPDIR /tmp \
  --unshare-pid --unshare-ipc --unshare-uts --die-with-parent --new-session \
  bash /tmp/stage-script
code=$?
set -e
if [ "$code" -ne 0 ]; then
  echo "$code" > "$BUILD_EXIT_CODE_FILE"
  exit "$BUILD_FAILURE_EXIT_CODE"
fi
