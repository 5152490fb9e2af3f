/**
 * How a job's variables reach its service containers without reaching the docker CLI that starts them.
 * `-e NAME` makes the CLI copy NAME from its own environment, so every job variable would be in the
 * environment of a process the daemon starts on the host (usually as root): PATH, LD_PRELOAD,
 * DOCKER_HOST or DOCKER_CONFIG set by a job would steer it. Instead the values go in an env file
 * (mode 0600, read by the CLI, removed once the services run). Docker's env file has one `NAME=value`
 * per line, so a value with a line break still travels by name, unless the name is one the CLI or the
 * system's loader reads itself; such a variable is left out, with a warning.
 */

/** Names a process on the host reads for itself: never put in the CLI's environment. */
const HOST_SIDE = /^(PATH|HOME|TMPDIR|SHELL|IFS|ENV|BASH_ENV|GCONV_PATH|LOCPATH|NLSPATH|HOSTALIASES|LOCALDOMAIN|RES_OPTIONS|LD_.*|MALLOC_.*|GO.*|DOCKER_.*|XDG_.*|SSL_CERT_.*|.*_PROXY)$/i;

export interface ServiceEnv {
  /** The env file's text: the variables whose value is one line. */
  file: string;
  /** Multi-line values, passed to the CLI by name (`-e NAME`). */
  byName: Record<string, string>;
  /** Multi-line values under a name the host side reads (or holding a NUL): left out. */
  skipped: string[];
}

/** Splits `env` (the service environment) into the env file and the rest. */
export function splitServiceEnv(env: Record<string, string>): ServiceEnv {
  const lines: string[] = [];
  const byName: Record<string, string> = {};
  const skipped: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (!/[\n\r\0]/.test(value)) lines.push(`${key}=${value}`);
    else if (HOST_SIDE.test(key) || value.includes('\0')) skipped.push(key);
    else byName[key] = value;
  }
  return { file: lines.length > 0 ? `${lines.join('\n')}\n` : '', byName, skipped };
}
