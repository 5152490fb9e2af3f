/**
 * Services: one container each on the job's network, reachable by GitLab Runner's aliases
 * (common/service-aliases.ts), with the job's public variables and its own as environment
 * (common/service-variables.ts); then a bounded wait until every exposed TCP port accepts a connection.
 */
import { connect } from 'node:net';
import type { ExportedVariable } from '../types.js';
import { serviceAliases } from '../common/service-aliases.js';
import type { DockerCli } from './cli.js';
import type { ServiceSpec } from './options.js';


/** A runner service's `environment` ("NAME=value") as its own variables (GitLab Runner's Service.Variables). */
export function environmentVariables(entries: readonly string[] | undefined): Array<{ key: string; value: string }> {
  return (entries ?? []).map((entry) => ({ key: entry.slice(0, entry.indexOf('=')), value: entry.slice(entry.indexOf('=') + 1) }));
}

export interface StartedService {
  container: string;
  image: string;
  /** HEALTHCHECK_TCP_PORT among its variables: the one port waited for, instead of every exposed one. */
  port?: number;
}

/** A service's HEALTHCHECK_TCP_PORT (its variables or the job's, as GitLab Runner reads it). */
export function healthcheckPort(variables: readonly ExportedVariable[]): { port?: number } {
  const value = variables.findLast((v) => v.key.toUpperCase() === 'HEALTHCHECK_TCP_PORT')?.value.trim() ?? '';
  const port = /^\d{1,5}$/.test(value) ? Number(value) : 0;
  return port > 0 && port < 65536 ? { port } : {};
}

/**
 * `docker run -d` arguments for one service; the environment comes from `envFile` (the job's variables,
 * then the service's own) and, for the names in `byName`, from the CLI's environment (`-e KEY`): never a
 * value on the command line (service-env.ts). `flags` are the `[runners.docker]` ones of a service
 * (create-args.ts).
 */
export function serviceRunArgs(spec: ServiceSpec, options: { container: string; network: string; labels: string[]; envFile?: string; byName: string[]; flags: string[]; user?: string; platform?: string }): string[] {
  const args = ['run', '-d', '--name', options.container, ...options.labels, '--network', options.network];
  if (options.user) args.push('--user', options.user);
  if (options.platform) args.push('--platform', options.platform);
  for (const alias of serviceAliases(spec)) args.push('--network-alias', alias);
  args.push(...options.flags);
  if (options.envFile) args.push('--env-file', options.envFile);
  for (const key of options.byName) args.push('-e', key);
  const [entrypoint, ...entryArgs] = spec.entrypoint ?? [];
  if (entrypoint !== undefined) args.push('--entrypoint', entrypoint);
  args.push(spec.name, ...entryArgs, ...(spec.command ?? []));
  return args;
}

export interface WaitOptions {
  timeoutS: number;
  log: (line: string) => void;
  warn: (line: string) => void;
  signal: AbortSignal;
}

/** Waits for every exposed TCP port of every service; a service still closed at the deadline is warned about. */
export async function waitForServices(docker: DockerCli, services: readonly StartedService[], options: WaitOptions): Promise<void> {
  if (options.timeoutS < 0 || services.length === 0) return;
  const started = Date.now();
  options.log(`Waiting for services to be up and running (timeout ${options.timeoutS} seconds)...`);
  const deadline = started + options.timeoutS * 1000;
  const results = await Promise.all(services.map(async (service) => ({ service, missing: await waitOne(docker, service, deadline, options.signal) })));
  options.signal.throwIfAborted();
  for (const { service, missing } of results) {
    if (missing.length === 0) continue;
    const logs = await docker.run(['logs', '--tail', '10', service.container]).catch(() => '');
    options.warn(`*** WARNING: Service ${service.image} probably didn't start properly: nothing accepted a connection on ${missing.join(', ')} within ${options.timeoutS} seconds.`);
    if (logs) options.warn(`Service ${service.image} last log lines:\n${logs}`);
  }
  options.log(`Waited for services for ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

async function waitOne(docker: DockerCli, service: StartedService, deadline: number, signal: AbortSignal): Promise<string[]> {
  const info = await docker
    .run(['inspect', '--format', '{{json .Config.ExposedPorts}}|{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}', service.container], { signal })
    .catch(() => '');
  const [portsJson = 'null', ips = ''] = info.split('|');
  const ip = ips.trim().split(/\s+/)[0] ?? '';
  const ports = service.port
    ? [service.port]
    : Object.keys((JSON.parse(portsJson) as Record<string, unknown> | null) ?? {})
        .filter((p) => p.endsWith('/tcp'))
        .map((p) => Number.parseInt(p, 10));
  if (!ip) return ports.map((p) => `port ${p}`);
  let pending = ports;
  while (pending.length > 0 && Date.now() < deadline && !signal.aborted) {
    const open = await Promise.all(pending.map((port) => accepts(ip, port, Math.max(100, Math.min(1000, deadline - Date.now())))));
    pending = pending.filter((_, i) => !open[i]);
    if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return pending.map((p) => `${ip}:${p}`);
}

function accepts(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('timeout', () => done(false));
    socket.once('error', () => done(false));
  });
}
