#!/usr/bin/env bash
# Makes sure a docker engine answers: when none does, starts dockerd in the background (log in
# $DOCKERD_LOG), waits a bounded time for it, and fails saying why (with the log's tail) otherwise.
set -euo pipefail
LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
WAIT_S=${DOCKERD_WAIT_S:-60}

answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

if answers; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "ci: no docker engine answers and dockerd is not installed" >&2
  exit 1
fi
echo "ci: starting dockerd (log: $LOG)"
nohup dockerd >"$LOG" 2>&1 &
pid=$!
for _ in $(seq 1 "$WAIT_S"); do
  if answers; then echo "ci: dockerd is up"; exit 0; fi
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  sleep 1
done
echo "ci: dockerd did not come up within ${WAIT_S}s; last lines of $LOG:" >&2
tail -n 20 "$LOG" >&2 || true
exit 1
