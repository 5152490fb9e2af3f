/**
 * The systemd unit of the daemon: one template, rendered by `ci-runner install` with the paths of the
 * node and CLI that run it, and rendered with the defaults below into `packaging/ci-runner.service`
 * (a test keeps the two equal). Pure: no I/O here.
 *
 * Hardening keeps only what cannot break a shell job (jobs may run as root, install packages, use
 * sudo, ptrace, unshare, mount, write anywhere): see the comments in the template for what was left out
 * and why.
 */
import { DAEMON_NODE_FLAGS } from '../util/node-flags.js';

export interface UnitOptions {
  /** Service name, without `.service`. */
  service: string;
  /** Absolute path of the node binary. */
  node: string;
  /** Absolute path of the CLI entry (`dist/cli/main.js`). */
  cli: string;
  /** Absolute path of config.toml. */
  config: string;
  /** Absolute working directory of the daemon (relative builds_dir/cache_dir resolve against it). */
  workingDirectory: string;
  /** User the jobs run as (`run --user`); the daemon itself runs as root. */
  user?: string;
  /** Add `--syslog` to the run command (`install --syslog`, as GitLab Runner's unit has it). */
  syslog?: boolean;
  /** Seconds; must be longer than `shutdown_timeout`, or systemd kills jobs before they are reported. */
  timeoutStopSec: number;
}

/** What `packaging/ci-runner.service` is rendered with: an `npm install -g` under /usr/local. */
export const DEFAULT_UNIT_OPTIONS: UnitOptions = {
  service: 'ci-runner',
  node: '/usr/bin/node',
  cli: '/usr/local/lib/node_modules/ci-runner/dist/cli/main.js',
  config: '/etc/ci-runner/config.toml',
  workingDirectory: '/var/lib/ci-runner',
  timeoutStopSec: 120,
};

/** The stop timeout for a given `shutdown_timeout`: the drain time plus a minute for final updates. */
export function stopTimeoutFor(shutdownTimeoutSec: number): number {
  return Math.max(DEFAULT_UNIT_OPTIONS.timeoutStopSec, shutdownTimeoutSec + 60);
}

const TEMPLATE = `# systemd unit for the ci-runner daemon, written by \`ci-runner install\` (which puts in the paths of
# the node and ci-runner that ran it). To install by hand instead, fix the ExecStart paths, then:
#   cp ci-runner.service /etc/systemd/system/ && systemctl daemon-reload && systemctl enable --now ci-runner
#
# Stopping, as GitLab Runner: systemd sends SIGTERM to the daemon only (KillMode=mixed), which aborts
# running jobs at once and reports them failed (runner_interrupted), waiting up to \`shutdown_timeout\`
# (config.toml, default 30 s) for their final updates. TimeoutStopSec must be longer than that, or
# systemd kills the jobs (SIGKILL to the whole cgroup) before they are reported. To let running jobs
# finish instead (an upgrade): \`systemctl kill -s SIGQUIT ci-runner\`, or a drop-in with
# KillSignal=SIGQUIT and a TimeoutStopSec as long as the longest job. \`systemctl reload\` sends
# SIGHUP: config.toml is re-read.
#
# The daemon runs as root (job processes run as \`--user\` when given); it needs to switch users, reach
# the docker engine and own its state. The hardening below takes only what no shell job needs. Left out on
# purpose: ProtectSystem/ProtectHome/PrivateTmp/PrivateDevices (jobs install packages, use /home, /tmp
# and devices; docker bind-mounts host paths), NoNewPrivileges (sudo in jobs), ProtectControlGroups and
# ProtectKernelTunables (both make /sys/fs/cgroup read-only; job containment creates cgroups in the
# subtree Delegate= hands to the daemon), RestrictNamespaces and @mount/@debug (unshare, ptrace in jobs),
# MemoryDenyWriteExecute (Node's JIT).

[Unit]
Description=ci-runner CI runner daemon ({{service}})
Documentation=https://www.npmjs.com/package/ci-runner
After=network-online.target docker.service
Wants=network-online.target
# At most 10 starts in 5 minutes: a daemon that keeps failing (a broken config) is left failed.
StartLimitIntervalSec=300
StartLimitBurst=10

[Service]
Type=simple
ExecStart={{execStart}}
ExecReload=/bin/kill -HUP $MAINPID
WorkingDirectory={{workingDirectory}}
StateDirectory={{service}}
KillMode=mixed
Delegate=yes
KillSignal=SIGTERM
TimeoutStopSec={{timeoutStopSec}}
Restart=always
RestartSec=5
Environment=NODE_ENV=production
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
SystemCallFilter=~@clock @cpu-emulation @module @obsolete @raw-io @reboot @swap
SystemCallErrorNumber=EPERM
CapabilityBoundingSet=~CAP_SYS_MODULE CAP_SYS_RAWIO CAP_SYS_BOOT CAP_SYS_TIME CAP_SYS_TTY_CONFIG CAP_SYSLOG CAP_WAKE_ALARM CAP_BLOCK_SUSPEND CAP_LINUX_IMMUTABLE CAP_MAC_ADMIN CAP_MAC_OVERRIDE CAP_AUDIT_CONTROL CAP_AUDIT_READ CAP_AUDIT_WRITE CAP_SYS_PACCT CAP_LEASE

[Install]
WantedBy=multi-user.target
`;

/** The unit file text for `options`. */
export function renderUnit(options: UnitOptions): string {
  const args = [options.node, ...DAEMON_NODE_FLAGS, options.cli, 'run', '--config', options.config];
  if (options.user) args.push('--user', options.user);
  if (options.syslog) args.push('--syslog');
  const values: Record<string, string> = {
    service: options.service,
    execStart: args.map(quoteExecArg).join(' '),
    workingDirectory: quoteExecArg(options.workingDirectory),
    timeoutStopSec: String(options.timeoutStopSec),
  };
  return TEMPLATE.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`unit template: no value for {{${key}}}`);
    return value;
  });
}

/**
 * One ExecStart word: `%` and `$` doubled (systemd specifiers and variables would otherwise expand),
 * and double quotes around anything with spaces, quotes or backslashes.
 */
export function quoteExecArg(arg: string): string {
  const escaped = arg.replace(/%/g, '%%').replace(/\$/g, '$$$$');
  if (!/[\s"'\\]/.test(escaped) && escaped !== '') return escaped;
  return `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

/** A name systemd accepts for a unit and that is safe as a file name. */
export function validServiceName(name: string): boolean {
  return /^[A-Za-z0-9:_.\\-]{1,200}$/.test(name) && !name.startsWith('.') && !name.includes('\\');
}
