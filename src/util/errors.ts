/**
 * The project's error base: every error a caller may branch on has a stable `code` and keeps its
 * `cause`. Messages a user sees say what to do next.
 */
export class CiRunnerError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** True when `error` is a `CiRunnerError` with the given code. */
export function hasCode(error: unknown, code: string): boolean {
  return error instanceof CiRunnerError && error.code === code;
}
