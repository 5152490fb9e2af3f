export { ConfigError } from './errors.js';
export { loadConfig, parseConfig, type LoadedConfig, type LoadOptions } from './load.js';
export { defaultConfigPath, resolveConfigPath } from './paths.js';
export { appendRunner, removeRunners, updateRunner, writeAtomic, type NewRunnerEntry } from './write.js';
export type { Config, RunnerConfig } from './schema.js';
export { configSchema, runnerSchema } from './schema.js';
