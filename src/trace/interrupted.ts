/**
 * The lines that end the trace of a job the runner lost mid-run (killed, crashed, the machine went
 * down) and reported `failed` when it started again. Without them the log would just stop at the
 * job's last output and nobody could tell a hung script from a dead runner.
 */

export interface Interruption {
  /** When the job last wrote to its log (the spool's modification time), if known. */
  lastOutputAt?: Date;
  /** When the restarted runner took the job up again to report it. */
  recoveredAt: Date;
  /** What else recovery did, e.g. "killed 2 processes the job left behind". */
  detail?: string;
}

/** A yellow warning and a bold red error line, like the runner's own; starts on a fresh line. */
export function interruptedNotice(interruption: Interruption, startsMidLine: boolean): string {
  const last = interruption.lastOutputAt ? `; its last output above was written at ${interruption.lastOutputAt.toISOString()}` : '';
  const detail = interruption.detail ? `, ${interruption.detail}` : '';
  return (
    (startsMidLine ? '\n' : '') +
    `\u001b[0;33mWARNING: The runner stopped (killed or crashed) while this job was running${last}.\u001b[0;m\n` +
    `\u001b[31;1mERROR: Job failed (system failure): the runner recovered the job at ${interruption.recoveredAt.toISOString()} ` +
    `when it started again${detail}, and reports it failed.\u001b[0;m\n`
  );
}
