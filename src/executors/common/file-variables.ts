import type { ExportedVariable } from '../types.js';

/** The host files of a job's file variables (ExportedVariable.file), each once. */
export function fileVariablePaths(list: readonly ExportedVariable[]): string[] {
  return [...new Set(list.flatMap((v) => (v.file === undefined ? [] : [v.file])))];
}
