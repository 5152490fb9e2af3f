/** `ci-runner serve` as a real child process, for tests that measure it or kill it. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';

const MAIN = join(import.meta.dirname, '../../src/cli/main.ts');

export const REGISTRATION_TOKEN = 'REGTOKEN1234567890ab';
export const ADMIN_TOKEN = 'ADMINTOKEN1234567890';

export interface ServeProcess {
  child: ResultPromise<{ reject: false; all: true }>;
  url: string;
  pid: number;
  /** Everything printed so far (stdout and stderr). */
  output(): string;
}

/**
 * Starts `serve --port 0` with fixed tokens plus `args` and waits for its ready block; with `umask`
 * (octal text, e.g. `000`), under that file-mode creation mask.
 */
export async function startServe(args: string[], options: { umask?: string } = {}): Promise<ServeProcess> {
  const command = ['node', '--import', 'tsx', MAIN, 'serve', '--port', '0', '--registration-token', REGISTRATION_TOKEN, '--admin-token', ADMIN_TOKEN, ...args];
  const [file, ...rest] = options.umask === undefined ? command : ['sh', '-c', `umask ${options.umask} && exec "$@"`, 'sh', ...command];
  const child = execa(file!, rest, { reject: false, all: true, env: { NO_COLOR: '1' } });
  let out = '';
  child.all?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready block within 30 s; output so far:\n${out}`)), 30_000);
    child.stdout?.on('data', () => {
      const found = /URL:\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
      if (found && out.includes('Runners register at')) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    void child.then((result) => {
      clearTimeout(timer);
      reject(new Error(`serve exited early (${result.exitCode}):\n${out}`));
    });
  });
  return { child, url, pid: child.pid!, output: () => out };
}

/** Reads a `serve` child's stdout until its ready block's last line has arrived; rejects if it exits first. */
export async function readyBlock(child: ResultPromise<{ reject: false; all: true }>): Promise<string> {
  let out = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ready block within 30 s; output so far:\n${out}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Runners register at')) {
        clearTimeout(timer);
        resolve(out);
      }
    });
    void child.then((result) => {
      clearTimeout(timer);
      reject(new Error(`serve exited early (${result.exitCode}):\n${result.all}`));
    });
  });
}

/** Resident memory of a process in bytes (Linux /proc), or undefined elsewhere. */
export function rssBytes(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
