/** Asking for missing values at a terminal (`register` without --non-interactive). */
import { createInterface } from 'node:readline';
import { CiRunnerError } from '../errors.js';

/** True when both stdin and stdout are terminals. */
export function interactive(): boolean {
  return process.stdin.isTTY === true && process.stdout.isTTY === true;
}

/**
 * Asks each question in turn; an empty answer keeps the default. Answers are read from a line
 * iterator, so lines typed (or pasted) ahead of a question are kept for it rather than lost.
 */
export async function ask(questions: Array<{ text: string; default?: string }>): Promise<string[]> {
  const rl = createInterface({ input: process.stdin, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  try {
    const answers: string[] = [];
    for (const q of questions) {
      process.stdout.write(`${q.text}${q.default ? ` [${q.default}]` : ''}:\n`);
      const next = await lines.next();
      if (next.done) throw new CiRunnerError('PROMPT_ABORTED', 'input ended before every question was answered');
      const answer = String(next.value).trim();
      answers.push(answer === '' ? (q.default ?? '') : answer);
    }
    return answers;
  } finally {
    rl.close();
  }
}
