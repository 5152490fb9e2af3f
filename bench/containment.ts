/**
 * What a job's cgroup costs: median wall time of a one-command stage (`true`) — the job's first stage
 * (the first move into a new cgroup is the dear one) and a later one — and of a job's setup plus
 * cleanup, with the job in its own cgroup and with the process-group fallback. Skipped with a printed
 * reason where this process cannot create cgroups.
 */
import { SCRIPT_STEP, stepStage } from '../src/executors/common/stages.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { processContainment } from '../src/executors/cgroup/containment.js';
import { ShellExecutor } from '../src/executors/shell/index.js';

const STAGES = 40;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

async function timeStage(executor: ShellExecutor, dir: string): Promise<number> {
  const started = performance.now();
  await executor.runStage({ stage: stepStage(SCRIPT_STEP), commands: ['true'], echoCommands: false, variables: [], workDir: dir, scriptDir: dir, output: () => undefined, signal: new AbortController().signal });
  return performance.now() - started;
}

async function measure(useCgroups: boolean, dir: string): Promise<{ firstMs: number; laterMs: number; setupMs: number }> {
  const first: number[] = [];
  const later: number[] = [];
  const setups: number[] = [];
  for (let i = 0; i < STAGES; i += 1) {
    const setupStart = performance.now();
    const executor = await ShellExecutor.create({ shell: 'bash', killGraceMs: 1000, useCgroups });
    const setupMs = performance.now() - setupStart;
    first.push(await timeStage(executor, dir));
    later.push(await timeStage(executor, dir));
    const cleanupStart = performance.now();
    await executor.cleanup();
    setups.push(setupMs + performance.now() - cleanupStart);
  }
  return { firstMs: median(first), laterMs: median(later), setupMs: median(setups) };
}

/** Prints the figures. */
export async function run(): Promise<void> {
  const containment = await processContainment();
  if (containment.kind !== 'cgroup') {
    process.stdout.write(`skipped: cgroups not available (${containment.reason})\n`);
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-containment-'));
  try {
    for (const useCgroups of [true, false]) {
      const { firstMs, laterMs, setupMs } = await measure(useCgroups, dir);
      const name = useCgroups ? 'cgroup v2     ' : 'process group ';
      process.stdout.write(`${name}: stage \`true\` first ${firstMs.toFixed(1)} ms, later ${laterMs.toFixed(1)} ms; job setup + cleanup ${setupMs.toFixed(1)} ms (medians of ${STAGES} jobs)\n`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
