/**
 * For foreground commands that print a pipeline (`demo`, `exec`): SIGINT/SIGTERM and a closed stdout
 * (`ci-runner exec | head`) abort one controller, so the command stops its work and ends quietly
 * instead of crashing on EPIPE.
 */
export interface Interrupt {
  signal: AbortSignal;
  /** The signal that stopped the command, if one did. */
  readonly stoppedBy: NodeJS.Signals | undefined;
  /** 130 after SIGINT, 143 after SIGTERM (and 130 when stdout closed). */
  exitCode(): number;
  dispose(): void;
}

export function interruptOnSignals(): Interrupt {
  const controller = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    stoppedBy ??= signal;
    controller.abort(new Error('interrupted'));
  };
  const onOutputError = (error: NodeJS.ErrnoException): void => {
    if (error.code === 'EPIPE') controller.abort(new Error('output closed'));
  };
  process.stdout.on('error', onOutputError);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    signal: controller.signal,
    get stoppedBy() {
      return stoppedBy;
    },
    exitCode: () => (stoppedBy === 'SIGTERM' ? 143 : 130),
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      process.stdout.off('error', onOutputError);
    },
  };
}

/**
 * Runs a foreground command's `work` under `interruptOnSignals`: its result becomes the exit code;
 * when it was interrupted, `<name> interrupted` is said and the exit code is 130 or 143.
 */
export async function runInterruptible(name: string, work: (signal: AbortSignal) => Promise<number>): Promise<void> {
  const interrupt = interruptOnSignals();
  try {
    process.exitCode = await work(interrupt.signal);
  } catch (error) {
    if (!interrupt.signal.aborted) throw error;
    process.stderr.write(`${name} interrupted\n`);
    process.exitCode = interrupt.exitCode();
  } finally {
    interrupt.dispose();
  }
}
