/**
 * V8 flags every `ci-runner` process is started with, in one place: the bin's shebang
 * (src/cli/main.ts, `#!/usr/bin/env -S node …`, which a test keeps equal to this list), the systemd
 * unit's ExecStart (src/service/unit.ts), the idle benchmark and the tests that run the CLI.
 *
 * `--max-semi-space-size=1` (MiB): V8 grows the young generation up to 16 MiB per semi-space under
 * allocation bursts (module loading at start, a job's trace and uploads) and keeps it grown, which an
 * idle daemon pays for in RSS (bench/idle.ts: ~14 MB). Scavenges of a 1 MiB young generation stay
 * cheap for a runner, whose work is I/O.
 *
 * `--liftoff-only`: WebAssembly stays on V8's baseline compiler. undici parses HTTP with llhttp built
 * to WebAssembly, and at every start V8's optimizing compiler otherwise recompiles it in the
 * background: about 0.6 s of CPU (user and system) of the 2.5 s an `exec` of a one-line job costs here,
 * paid again by every `exec`, `run-once` and `register`. Parsing a runner's responses on the baseline
 * code costs no measurable time.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--liftoff-only'];
