#!/usr/bin/env bash
# cleanup_exec: the job's files go; the project's cache stays.
source "$(dirname "$0")/base.sh"
rm -rf "$CI_RUNNER_BWRAP_JOB_DIR"
