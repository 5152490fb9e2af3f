import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ShellExecutor } from '../../src/executors/shell/index.js';
import { findMarked, processAlive } from '../../src/executors/shell/process-group.js';
import type { StageRequest } from '../../src/executors/types.js';

async function stage(executor: ShellExecutor, partial: Partial<StageRequest> & { commands: string[] }) {
  const dir = await mkdtemp(join(tmpdir(), 'shell-exec-'));
  const chunks: Uint8Array[] = [];
  const result = await executor.runStage({
    stage: 'build_script',
    echoCommands: true,
    variables: [],
    workDir: dir,
    scriptDir: dir,
    output: (chunk) => chunks.push(chunk),
    signal: new AbortController().signal,
    ...partial,
  });
  return { result, output: Buffer.concat(chunks).toString('utf8'), dir };
}


async function waitFor(predicate: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const tricky = [
  { key: 'QUOTES', value: `it's "quoted" \`tick\`` },
  { key: 'NEWLINES', value: 'line one\nline two\n' },
  { key: 'DOLLARS', value: '$HOME ${PATH} $(echo no) $$' },
  { key: 'BACKSLASH', value: 'a\\nb\\' },
];

describe.each(['bash', 'sh'] as const)('shell executor (%s)', (shell) => {
  const executor = new ShellExecutor({ shell, killGraceMs: 500 });

  it('exports values with quotes, newlines and $ literally', async () => {
    const { result, dir } = await stage(executor, {
      variables: tricky,
      echoCommands: false,
      commands: tricky.map(({ key }) => `printf '%s' "$${key}" > ${key}.out`),
    });
    expect(result.exitCode).toBe(0);
    for (const { key, value } of tricky) expect(await readFile(join(dir, `${key}.out`), 'utf8')).toBe(value);
  });

  it('echoes each user command in green before running it', async () => {
    const { output } = await stage(executor, { commands: ['echo "hello $USER_X"'], variables: [{ key: 'USER_X', value: 'w' }] });
    expect(output).toContain('\u001b[32;1m$ echo "hello $USER_X"\u001b[0;m\n');
    expect(output).toContain('hello w\n');
  });

  it('stops at the first failing command with its exit code', async () => {
    const { result, output } = await stage(executor, { commands: ['echo one', 'false', 'echo never'] });
    expect(result.exitCode).toBe(1);
    expect(output).toContain('one');
    expect(output).not.toContain('\nnever');
    expect((await stage(executor, { commands: ['exit 7'] })).result.exitCode).toBe(7);
  });

  it('interleaves stdout and stderr', async () => {
    const { output } = await stage(executor, { echoCommands: false, commands: ['echo out1', 'echo err1 >&2', 'echo out2'] });
    expect(output).toMatch(/out1\n[^]*err1\n[^]*out2\n/);
  });

  it('does not pass the runner token from the daemon environment to jobs', async () => {
    process.env.CI_SERVER_TOKEN = 'runner-secret';
    try {
      const { output } = await stage(executor, { echoCommands: false, commands: ['echo "token=${CI_SERVER_TOKEN:-none}"'] });
      expect(output).toContain('token=none');
    } finally {
      delete process.env.CI_SERVER_TOKEN;
    }
  });

  it('runs the commands in the work dir', async () => {
    const { output, dir } = await stage(executor, { echoCommands: false, commands: ['pwd'] });
    expect(output.trim()).toBe(dir);
  });

  it('hands output on while the stage runs, bytes unchanged', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shell-stream-'));
    const chunks: Buffer[] = [];
    // The stage waits for a file the test writes only once it has seen the first line.
    const { result } = await stage(executor, {
      echoCommands: false,
      workDir: dir,
      scriptDir: dir,
      commands: ["printf 'first \\377\\376\\n'", `while [ ! -e ${join(dir, 'go')} ]; do sleep 0.05; done`, 'echo second'],
      output: (chunk) => {
        chunks.push(Buffer.from(chunk));
        if (Buffer.concat(chunks).includes('first')) writeFileSync(join(dir, 'go'), '');
      },
    });
    expect(result.exitCode).toBe(0);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from([...Buffer.from('first '), 0xff, 0xfe, 0x0a, ...Buffer.from('second\n')]));
  });

  it('reports the signal that ended the stage', async () => {
    const { result } = await stage(executor, { commands: ['kill -KILL $$'] });
    expect(result).toEqual({ exitCode: null, signal: 'SIGKILL', aborted: false });
  });

  it('fails with the reason when the shell cannot be started', async () => {
    vi.stubEnv('PATH', '/nonexistent');
    try {
      await expect(stage(executor, { commands: ['echo never'] })).rejects.toThrow(new RegExp(`could not start the build_script stage: spawn ${shell} ENOENT`));
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

// These run with the fallback (process group + marker sweep): `new ShellExecutor` makes no cgroup.
// The cgroup's own tests are in cgroup.test.ts.
describe('killing a job', () => {
  const executor = new ShellExecutor({ shell: 'bash', killGraceMs: 500 });

  // Sleeps of lengths no other test uses: test files run side by side, and `ps` sees them all.
  it('leaves no process behind after an abort: background, double-forked and setsid children', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shell-kill-'));
    const controller = new AbortController();
    const pidFile = join(dir, 'pids');
    const running = stage(executor, {
      workDir: dir,
      scriptDir: dir,
      echoCommands: false,
      signal: controller.signal,
      commands: [
        `sleep 2100 & echo $! >> ${pidFile}`,
        `( sleep 2101 & echo $! >> ${pidFile} ) &`,
        `setsid sh -c 'echo $$ >> ${pidFile}; exec sleep 2102' &`,
        `trap '' TERM; echo ready; sleep 2103`,
      ],
    });
    await waitFor(async () => {
      const text = await readFile(pidFile, 'utf8').catch(() => '');
      return text.trim().split('\n').length >= 3;
    });
    const pids = (await readFile(pidFile, 'utf8')).trim().split('\n').map(Number);
    for (const pid of pids) expect(await processAlive(pid)).toBe(true);
    controller.abort(new Error('canceled'));
    const { result } = await running;
    expect(result.aborted).toBe(true);
    await waitFor(async () => (await Promise.all(pids.map(processAlive))).every((alive) => !alive));
    expect(await findMarked(executor.marker)).toEqual([]);
    const ps = execFileSync('ps', ['-eo', 'stat,args']).toString().split('\n').filter((l) => !l.startsWith('Z')).join('\n');
    expect(ps).not.toMatch(/sleep 210[0-3]/);
  });

  it('kills what a stage left running when the stage ends normally', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shell-left-'));
    const pidFile = join(dir, 'pid');
    await writeFile(pidFile, '');
    const { result } = await stage(executor, { workDir: dir, scriptDir: dir, echoCommands: false, commands: [`sleep 1004 > /dev/null 2>&1 & echo $! > ${pidFile}`, 'sleep 1005 &', 'echo done'] });
    expect(result.exitCode).toBe(0);
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    await waitFor(async () => !(await processAlive(pid)));
    expect(execFileSync('ps', ['-eo', 'stat,args']).toString().split('\n').filter((l) => !l.startsWith('Z')).join('\n')).not.toMatch(/sleep 100[45]/);
  });

  it('kills a stage that ignores SIGTERM with SIGKILL once the grace period is over, and says so', async () => {
    const controller = new AbortController();
    let seen = '';
    const running = stage(executor, {
      echoCommands: false,
      signal: controller.signal,
      commands: ["trap '' TERM", 'echo ready', 'sleep 1007'],
      output: (chunk) => {
        seen += Buffer.from(chunk).toString();
        if (seen.includes('ready')) controller.abort(new Error('canceled'));
      },
    });
    const { result } = await running;
    expect(result).toEqual({ exitCode: null, signal: 'SIGKILL', aborted: true, killedAfterMs: 500 });
  });

  it('reports no forced kill for a stage that stops on SIGTERM', async () => {
    const controller = new AbortController();
    let seen = '';
    const { result } = await stage(executor, {
      echoCommands: false,
      signal: controller.signal,
      commands: ['echo ready', 'sleep 1008'],
      output: (chunk) => {
        seen += Buffer.from(chunk).toString();
        if (seen.includes('ready')) controller.abort(new Error('canceled'));
      },
    });
    expect(result).toEqual({ exitCode: null, signal: 'SIGTERM', aborted: true });
  });

  it('kills a grandchild that ignores SIGTERM when its stage ends normally', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shell-grandchild-'));
    const pidFile = join(dir, 'pid');
    const { result } = await stage(executor, {
      workDir: dir,
      scriptDir: dir,
      echoCommands: false,
      commands: [`( bash -c "trap '' TERM; echo \\$\\$ > ${pidFile}; exec sleep 1009" > /dev/null 2>&1 & )`, `while [ ! -s ${pidFile} ]; do sleep 0.05; done`],
    });
    expect(result.exitCode).toBe(0);
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    await waitFor(async () => !(await processAlive(pid)));
  });

  it('ends a stage whose output is still held open by a process that escaped it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shell-held-'));
    const pidFile = join(dir, 'pid');
    // setsid leaves the group, env -i drops the marker: nothing ties it to the job, yet it holds the pipes.
    const { result, output } = await stage(executor, {
      workDir: dir,
      scriptDir: dir,
      echoCommands: false,
      commands: [`setsid env -i sh -c 'echo $$ > ${pidFile}; exec sleep 1010' &`, `while [ ! -s ${pidFile} ]; do sleep 0.05; done`, 'echo done'],
    });
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    try {
      expect(result.exitCode).toBe(0);
      expect(output).toContain('done');
      expect(await processAlive(pid)).toBe(true);
    } finally {
      process.kill(pid, 'SIGKILL');
    }
  });

  it('cleanup kills a setsid child that outlived a normally ended stage', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'shell-setsid-'));
    const pidFile = join(dir, 'pid');
    const job = new ShellExecutor({ shell: 'bash', killGraceMs: 500 });
    const { result } = await stage(job, { workDir: dir, scriptDir: dir, echoCommands: false, commands: [`setsid sh -c 'echo $$ > ${pidFile}; exec sleep 1006' > /dev/null 2>&1 < /dev/null &`, `while [ ! -s ${pidFile} ]; do sleep 0.05; done`] });
    expect(result.exitCode).toBe(0);
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    expect(await processAlive(pid)).toBe(true);
    await job.cleanup();
    await waitFor(async () => !(await processAlive(pid)));
  });
});

/** Runs `first` then `second` through runChained; the result, the output and the moments `began` was called. */
async function chained(executor: ShellExecutor, first: string[], second: string[], signal = new AbortController().signal, dir?: string) {
  dir ??= await mkdtemp(join(tmpdir(), 'shell-chain-'));
  const chunks: Uint8Array[] = [];
  const began: number[] = [];
  const base = { echoCommands: false, workDir: dir, scriptDir: dir };
  const result = await executor.runChained({
    first: { ...base, stage: 'get_sources', commands: first, variables: [{ key: 'ONLY_FIRST', value: 'one' }], output: (chunk) => chunks.push(chunk), signal },
    second: { ...base, stage: 'step_script', commands: second, variables: [{ key: 'ONLY_SECOND', value: 'two' }] },
    between: (time: string) => `--between ${time}--\n`,
    began: (at) => began.push(at),
  });
  return { result, output: Buffer.concat(chunks).toString('utf8'), began, dir };
}

describe.each(['bash', 'sh'] as const)('chained stages (%s)', (shell) => {
  const executor = new ShellExecutor({ shell, killGraceMs: 500 });

  it('runs the second after the first with the text between them, each with its own variables, and says once when the second began', async () => {
    const { result, output, began } = await chained(executor, ['echo "first ${ONLY_FIRST}-${ONLY_SECOND:-}"'], ['echo "second ${ONLY_FIRST:-}-${ONLY_SECOND}"', 'exit 4']);
    expect(result.first.exitCode).toBe(0);
    expect(result.second?.exitCode).toBe(4);
    // The text between carries the shell's time where it asked for it (log section markers).
    expect(output).toMatch(/^first one-\n--between \d{10}--\nsecond -two\n$/);
    expect(began).toHaveLength(1);
  });

  it('ends with the first stage\'s status and never starts the second when the first fails', async () => {
    const { result, output, began } = await chained(executor, ['echo first', 'exit 3', 'echo not reached'], ['echo second']);
    expect(result).toEqual({ first: { exitCode: 3, aborted: false } });
    expect(output).toBe('first\n');
    expect(began).toEqual([]);
  });

  it('stops the second stage and its children on abort', async () => {
    const controller = new AbortController();
    const dir = await mkdtemp(join(tmpdir(), 'shell-chain-'));
    const run = chained(executor, ['true'], ['sleep 300 & echo "$!" > child.pid', 'sleep 300'], controller.signal, dir);
    // The abort comes once the second stage runs.
    await waitFor(async () => /^\d+$/.test((await readFile(join(dir, 'child.pid'), 'utf8').catch(() => '')).trim()));
    controller.abort();
    const { result, began } = await run;
    expect(began).toHaveLength(1);
    expect(result.second?.aborted).toBe(true);
    const child = Number(await readFile(join(dir, 'child.pid'), 'utf8'));
    await waitFor(async () => !(await processAlive(child)));
  });
});
