import { CiRunnerError } from '../../errors.js';

/** A config file that cannot be used; the CLI exits with 2 (usage/configuration). */
export class ConfigError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string, options?: { cause?: unknown }) {
    super('CONFIG_INVALID', message, options);
  }
}
