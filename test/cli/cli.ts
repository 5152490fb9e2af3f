/** Runs the built CLI (`npm run build` first) as a real process. */
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { DAEMON_NODE_FLAGS } from '../../src/util/node-flags.js';

export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
/** node's arguments that run the CLI as its bin does: the shebang's V8 flags, then main.js. */
export const NODE_CLI: readonly string[] = [...DAEMON_NODE_FLAGS, CLI];

/** Starts `node <flags> dist/cli/main.js ...args`, as the bin does; the promise resolves (never rejects) with the result. */
export function cli(args: string[], options: { env?: Record<string, string>; cwd?: string; input?: string } = {}): ResultPromise<{ reject: false; all: true }> {
  return execa('node', [...NODE_CLI, ...args], {
    reject: false,
    all: true,
    env: { ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
  }) as unknown as ResultPromise<{ reject: false; all: true }>;
}
