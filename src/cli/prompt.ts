/** Asking for missing values at a terminal (`register` without --non-interactive). */
import { createInterface } from 'node:readline';
import { CiRunnerError } from '../util/errors.js';

/** True when both stdin and stdout are terminals. */
export function interactive(): boolean {
  return process.stdin.isTTY === true && process.stdout.isTTY === true;
}

export interface Question {
  text: string;
  default?: string;
}

/**
 * A question-and-answer session on stdin/stdout. Answers are read from one line iterator for the
 * whole session, so lines typed (or pasted) ahead of a question are kept for it rather than lost,
 * also when a later question depends on an earlier answer.
 */
export class Prompter {
  private readonly rl = createInterface({ input: process.stdin, terminal: false });
  private readonly lines = this.rl[Symbol.asyncIterator]();

  /** Asks one question; an empty answer keeps the default. */
  async ask(q: Question): Promise<string> {
    process.stdout.write(`${q.text}${q.default ? ` [${q.default}]` : ''}:\n`);
    const next = await this.lines.next();
    if (next.done) throw new CiRunnerError('PROMPT_ABORTED', 'input ended before every question was answered');
    const answer = String(next.value).trim();
    return answer === '' ? (q.default ?? '') : answer;
  }

  close(): void {
    this.rl.close();
  }
}

