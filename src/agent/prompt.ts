/** Asking for missing values at a terminal (`register` without --non-interactive). */
import { createInterface } from 'node:readline/promises';

/** True when both stdin and stdout are terminals. */
export function interactive(): boolean {
  return process.stdin.isTTY === true && process.stdout.isTTY === true;
}

/** Asks each question in turn; an empty answer keeps the default. */
export async function ask(questions: Array<{ text: string; default?: string }>): Promise<string[]> {
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    const answers: string[] = [];
    for (const q of questions) {
      const suffix = q.default ? ` [${q.default}]` : '';
      const answer = (await rl.question(`${q.text}${suffix}:\n`)).trim();
      answers.push(answer === '' ? (q.default ?? '') : answer);
    }
    return answers;
  } finally {
    rl.close();
  }
}
