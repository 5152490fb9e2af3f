/**
 * Reading config.toml for a command or a reload: the file is loaded and checked, and what is
 * doubtful about it (unknown keys, a mode that lets others read the tokens) is logged as warnings.
 */
import { configLogger } from './config-logger.js';
import { ConfigError, loadConfig, type LoadedConfig, type LoadOptions } from './config/index.js';
import { checkConfigPermissions } from './config/permissions.js';

export interface ConfigReadOptions extends LoadOptions {
  /**
   * Look at the file's mode too (config/permissions.ts): `warn` about a file its group or others can
   * read or write; `refuse` stops (a `ConfigError`: exit 2) on one others can write, and warns about the rest.
   */
  permissions?: 'warn' | 'refuse';
}

/**
 * Loads the config and logs its warnings (on standard error, in the format and at the level the
 * loaded config asks for, or `--log-format`'s).
 */
export async function loadConfigWithWarnings(path: string, options: ConfigReadOptions = {}): Promise<LoadedConfig> {
  const loaded = await loadConfig(path, options);
  const warnings = [...loaded.warnings];
  const problem = options.permissions ? await checkConfigPermissions(path) : undefined;
  if (problem?.worldWritable && options.permissions === 'refuse') throw new ConfigError(`refusing to run: ${problem.message}`, { code: 'CONFIG_WORLD_WRITABLE' });
  if (problem) warnings.push(problem.message);
  if (warnings.length > 0) {
    const logger = configLogger(loaded.config);
    for (const warning of warnings) logger.warn(warning);
  }
  return loaded;
}
