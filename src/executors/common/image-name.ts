/** Image and service names as a job gives them, expanded as GitLab Runner expands them (docker, kubernetes). */
import { expandString } from '../../util/expand.js';
import type { ExportedVariable } from '../types.js';

/** Expands `$VAR`/`${VAR}` in an image or service name against the job's variables. */
export function expandName(name: string, variables: readonly ExportedVariable[]): string {
  const lookup = (key: string): string => variables.findLast((v) => v.key === key)?.value ?? '';
  return expandString(name, lookup).trim();
}
