/**
 * V8 flags the long-running daemon is started with, in one place: the `ci-runner` bin's shebang
 * (src/cli/main.ts, `#!/usr/bin/env -S node …`, which a test keeps equal to this list), the systemd
 * unit's ExecStart (src/service/unit.ts) and the idle benchmark.
 *
 * `--max-semi-space-size=1` (MiB): V8 grows the young generation up to 16 MiB per semi-space under
 * allocation bursts (module loading at start, a job's trace and uploads) and keeps it grown, which an
 * idle daemon pays for in RSS (bench/idle.ts: ~14 MB). Scavenges of a 1 MiB young generation stay
 * cheap for a runner, whose work is I/O.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];
