/**
 * Real driver programs for the custom executor's tests: bash scripts written into a temp dir, each
 * recording what it was given (arguments, environment, working dir) under `<dir>/record/`, and a
 * `gitlab-runner` on their PATH that is this build of ci-runner (dist/cli/main.js), so the stage
 * scripts' helper commands run for real. Build first (`npm run build`).
 */
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = resolve(fileURLToPath(new URL('../../../dist/cli/main.js', import.meta.url)));

export interface Drivers {
  dir: string;
  record: string;
  bin: string;
  config: string;
  prepare: string;
  run: string;
  cleanup: string;
  /** The recorded lines of `name` (`stages`, `env-prepare`, …). */
  read(name: string): Promise<string>;
}

export interface DriverScripts {
  /** config_exec's body (default: a JSON with builds_dir, cache_dir, the driver, job_env). */
  config?: string;
  prepare?: string;
  /** run_exec's body; `$script` and `$stage` are set (the last two arguments). Default: run it with bash, BUILD_FAILURE on failure. */
  run?: string;
  cleanup?: string;
}

const RUN = `
script="\${@: -2:1}"; stage="\${@: -1}"
echo "$stage" >> "$RECORD/stages"
bash "$script"
code=$?
if [ $code -ne 0 ]; then echo "$code" > "$BUILD_EXIT_CODE_FILE"; exit "$BUILD_FAILURE_EXIT_CODE"; fi
`;

/** Writes the four drivers into a fresh dir; `root` holds the driver's builds and cache dirs. */
export async function writeDrivers(root: string, scripts: DriverScripts = {}): Promise<Drivers> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-custom-'));
  const record = join(dir, 'record');
  const bin = join(dir, 'bin');
  await mkdir(record);
  await mkdir(bin);
  await writeFile(join(bin, 'gitlab-runner'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, { mode: 0o755 });
  const config =
    scripts.config ??
    `echo "config_exec says hello" >&2
cat <<EOF
{"builds_dir": "${root}/driver-builds", "cache_dir": "${root}/driver-cache", "builds_dir_is_shared": false, "hostname": "test-host",
 "driver": {"name": "test driver", "version": "v1.2.3"}, "job_env": {"DRIVER_SECRET": "from-config"}, "unknown_key": 1}
EOF`;
  const write = async (name: string, body: string): Promise<string> => {
    const path = join(dir, `${name}.sh`);
    const head = `#!/usr/bin/env bash\nRECORD=${JSON.stringify(record)}\nexport PATH=${JSON.stringify(bin)}:"$PATH"\n{ echo "args=$*"; echo "pwd=$PWD"; env | sort; } > "$RECORD/env-${name}"\n`;
    await writeFile(path, `${head}${body}\n`);
    await chmod(path, 0o755);
    return path;
  };
  return {
    dir,
    record,
    bin,
    config: await write('config', config),
    prepare: await write('prepare', scripts.prepare ?? 'echo "prepare_exec: JOB_RESPONSE_FILE has id $(grep -o \'"id":[0-9]*\' "$JOB_RESPONSE_FILE" | head -1)"'),
    run: await write('run', `script="\${@: -2:1}"; stage="\${@: -1}"\n${scripts.run ?? RUN}`),
    cleanup: await write('cleanup', scripts.cleanup ?? 'echo cleaned > "$RECORD/cleanup-done"'),
    read: (name) => readFile(join(record, name), 'utf8').catch(() => ''),
  };
}

/** `[runners.custom]` for `drivers`, with `extra` on top. */
export function customTable(drivers: Drivers, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    config_exec: drivers.config,
    config_args: ['config-arg'],
    prepare_exec: drivers.prepare,
    prepare_args: ['prepare-arg'],
    run_exec: drivers.run,
    run_args: ['run-arg'],
    cleanup_exec: drivers.cleanup,
    cleanup_args: ['cleanup-arg'],
    ...extra,
  };
}
