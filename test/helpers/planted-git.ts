/**
 * What a hostile job leaves in its checkout's `.git` for the runner's next git to run, and a trap
 * that tells whether any of it ran: programs in a directory outside the checkout (on the runner's
 * machine) that each note their name in `ran` when started.
 */
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export const PLANTS = ['post-checkout hook', 'core.fsmonitor', 'smudge filter', 'core.hooksPath', 'include.path'] as const;
export type Plant = (typeof PLANTS)[number];

export interface Trap {
  dir: string;
  /** The names of the planted programs that ran, in order. */
  ran(): Promise<string[]>;
}

/** A trap in a fresh dir anyone may write (a job user's program must be able to note itself too). */
export async function makeTrap(): Promise<Trap> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-trap-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  await chmod(dir, 0o777);
  await mkdir(join(dir, 'bin'));
  await mkdir(join(dir, 'hooks'));
  const program = async (path: string, name: string, tail: string): Promise<void> => {
    await writeFile(path, `#!/bin/sh\necho ${name} >> ${join(dir, 'ran')}\n${tail}\n`);
    await chmod(path, 0o755);
  };
  for (const name of ['fsmonitor', 'include', 'gpg']) await program(join(dir, 'bin', name), name, 'exit 0');
  await program(join(dir, 'bin', 'smudge'), 'smudge', 'exec cat');
  await program(join(dir, 'hooks', 'post-checkout'), 'hooks-path', 'exit 0');
  return {
    dir,
    ran: async () => (await readFile(join(dir, 'ran'), 'utf8').catch(() => '')).split('\n').filter(Boolean),
  };
}

/** `printf` of `lines` (no quotes or percent signs in them) into `file`, appending with `>>`. */
function append(file: string, lines: string[]): string {
  return `printf '${lines.map((line) => `${line.replace(/\t/g, '\\t')}\\n`).join('')}' >> ${file}`;
}

/** Shell lines a job runs in its checkout to plant `plant`, pointing at the trap's programs. */
export function plantLines(plant: Plant, trap: Trap): string[] {
  const bin = join(trap.dir, 'bin');
  switch (plant) {
    case 'post-checkout hook':
      return ['mkdir -p .git/hooks', append('.git/hooks/post-checkout', ['#!/bin/sh', `echo post-checkout >> ${join(trap.dir, 'ran')}`]), 'chmod 755 .git/hooks/post-checkout'];
    case 'core.fsmonitor':
      return [append('.git/config', ['[core]', `\tfsmonitor = ${join(bin, 'fsmonitor')}`])];
    case 'smudge filter':
      // README.md goes, so the next job's checkout writes it again, through the filter.
      return [
        append('.git/config', ['[filter "evil"]', `\tsmudge = ${join(bin, 'smudge')}`]),
        append('.gitattributes', ['* filter=evil']),
        'mkdir -p .git/info',
        append('.git/info/attributes', ['* filter=evil']),
        'rm README.md',
      ];
    case 'core.hooksPath':
      return [append('.git/config', ['[core]', `\thooksPath = ${join(trap.dir, 'hooks')}`])];
    case 'include.path':
      return [append('.git/evil.inc', ['[core]', `\tfsmonitor = ${join(bin, 'include')}`]), append('.git/config', ['[include]', '\tpath = evil.inc'])];
  }
}

/** A pipeline whose job runs `lines` (and fetches into the slot's checkout). */
export function jobYaml(lines: string[]): string {
  return `j:\n  variables:\n    GIT_STRATEGY: fetch\n  script:\n${lines.map((line) => `    - ${JSON.stringify(line)}\n`).join('')}`;
}
