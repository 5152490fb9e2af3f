/** Runs the built CLI (`npm run build` first) as a real process. */
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

/** Starts `node dist/cli/main.js ...args`; the promise resolves (never rejects) with the result. */
export function cli(args: string[], options: { env?: Record<string, string>; cwd?: string; input?: string } = {}): ResultPromise<{ reject: false; all: true }> {
  return execa('node', [CLI, ...args], {
    reject: false,
    all: true,
    env: { ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
  }) as unknown as ResultPromise<{ reject: false; all: true }>;
}
