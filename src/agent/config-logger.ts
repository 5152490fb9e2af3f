/** Loggers made from config.toml's `log_level` and `log_format` (GitLab Runner's `panic` is our `fatal`). */
import { createLogger, type LevelWithSilent, type Logger } from '../log/index.js';
import type { Config } from './config/schema.js';

export function loggerLevel(level: Config['log_level'] | 'silent'): LevelWithSilent {
  return level === 'panic' ? 'fatal' : level;
}

/** A root logger as the config asks for (`--log-format`, when given, wins over `log_format`). */
export function configLogger(config: { log_level: Config['log_level'] | 'silent'; log_format: Config['log_format'] }): Logger {
  return createLogger({ level: loggerLevel(config.log_level), format: config.log_format });
}
