import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** `/etc/ci-runner/config.toml` as root, `~/.ci-runner/config.toml` otherwise (GitLab Runner's layout). */
export function defaultConfigPath(): string {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return root ? '/etc/ci-runner/config.toml' : join(homedir(), '.ci-runner', 'config.toml');
}

/** `--config`, else `CONFIG_FILE`, else the default; always absolute. */
export function resolveConfigPath(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(flag ?? env.CONFIG_FILE ?? defaultConfigPath());
}
