import { CiRunnerError } from '../../util/errors.js';

/** A config file that cannot be used; the CLI exits with 2 (usage/configuration). */
export class ConfigError extends CiRunnerError {
  readonly exitCode = 2;

  /** `code`: CONFIG_INVALID unless the caller tells a more precise one. */
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    const { code = 'CONFIG_INVALID', ...rest } = options ?? {};
    super(code, message, rest);
  }
}
