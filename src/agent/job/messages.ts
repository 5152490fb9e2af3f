/** Runner lines in a job trace, coloured the way GitLab Runner colours them. */
import { shortToken } from '../../util/short-token.js';

const ESC = '\u001b';
/** Erase to end of line, as GitLab Runner starts its header. */
export const CLEAR_LINE = `${ESC}[0K`;
/** Reset colours. */
export const RESET = `${ESC}[0;m`;

/** A green runner notice (stage starts, progress). */
export function notice(text: string): string {
  return `${ESC}[32;1m${text}${RESET}\n`;
}

/** A yellow warning. */
export function warning(text: string): string {
  return `${ESC}[0;33m${text}${RESET}\n`;
}

/** A bold red error line. */
export function errorLine(text: string): string {
  return `${ESC}[31;1m${text}${RESET}\n`;
}

/**
 * The header that opens every trace (GitLab Runner's `  on NAME SHORT-TOKEN, system ID: ID`, the system
 * id when the job came over v4); `flags`: the feature flags not at their default (its line too).
 */
export function header(version: string, runnerName: string, token: string, flags = '', systemId?: string): string {
  const flagLine = flags === '' ? '' : `  feature flags: ${flags}\n`;
  return `${CLEAR_LINE}Running with ci-runner ${version}\n  on ${runnerName} ${shortToken(token)}${systemId ? `, system ID: ${systemId}` : ''}\n${flagLine}${RESET}`;
}
