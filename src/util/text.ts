/**
 * Trimming a repeated character off a string's ends without a regular expression: `/\/+$/` retries
 * at every `/` of a run that does not end the text, which costs the square of the run's length, and
 * these strings (URLs, paths, patterns) come from jobs and coordinators.
 */

/** `text` without the `char`s that end it. */
export function trimEndChar(text: string, char: string): string {
  let end = text.length;
  while (end > 0 && text[end - 1] === char) end -= 1;
  return end === text.length ? text : text.slice(0, end);
}

/** `text` without the `char`s that start it. */
export function trimStartChar(text: string, char: string): string {
  let start = 0;
  while (start < text.length && text[start] === char) start += 1;
  return start === 0 ? text : text.slice(start);
}
