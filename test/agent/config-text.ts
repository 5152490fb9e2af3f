/** Parsing config.toml text in tests: the first runner entry as read, or the error a bad file gets. */
import { parseConfig } from '../../src/agent/config/index.js';

/** The head of a config with one `[[runners]]` entry of `executor`; tables and keys follow it. */
export function configHead(executor: string, name = 'box'): string {
  return `concurrent = 1

[[runners]]
  name = "${name}"
  url = "http://127.0.0.1:8080/"
  token = "abcdef0123456789"
  executor = "${executor}"
`;
}

/** The first runner entry of `text` (file name `c.toml` in messages) and the warnings. */
export function firstRunner(text: string) {
  const { config, warnings } = parseConfig(text, 'c.toml');
  return { runner: config.runners[0]!, warnings };
}

/** The message `text` is refused with; throws when it is accepted. */
export function configFailure(text: string): string {
  try {
    parseConfig(text, 'c.toml');
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the config was accepted');
}
