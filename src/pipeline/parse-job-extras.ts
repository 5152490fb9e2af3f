/**
 * Job keys that shape where and how a job runs beside its script: `resource_group` (jobs of one group
 * one at a time), `id_tokens` (JWTs the server signs for the job), `pages` (the site's directory,
 * added to the artifacts) and `run` (CI/CD steps, of which those that are a `script` or an `exec` are
 * run here as commands). Each reader takes the raw YAML value and where it sits.
 */
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { ID_TOKEN_KEYWORDS, PAGES_KEYWORDS } from './keywords.js';
import { checkKeys, isMap, readBoolean, readMap, readString, readStringList, type YamlMap } from './parse-values.js';
import type { JobIdToken } from './spec.js';

/** GitLab's limit on a resource group's key. */
const MAX_RESOURCE_GROUP = 255;

/** `resource_group: production` (variables in it are expanded per build). */
export function readResourceGroup(value: unknown, path: ConfigPath): string {
  const text = readString(value, path);
  if (text.length > MAX_RESOURCE_GROUP) configError(path, `is longer than ${MAX_RESOURCE_GROUP} characters`);
  return text;
}

const TOKEN_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `id_tokens: { ID_TOKEN_1: { aud: https://vault.example.com } }`: one JWT per variable. */
export function readIdTokens(value: unknown, path: ConfigPath): JobIdToken[] {
  const map = readMap(value, path);
  return Object.entries(map).map(([name, raw]) => {
    const at = childPath(path, name);
    if (!TOKEN_NAME.test(name)) configError(at, 'is not a valid variable name (letters, digits and _, not starting with a digit)');
    const token = readMap(raw, at);
    checkKeys(token, ID_TOKEN_KEYWORDS, at);
    if (typeof token.aud === 'string') return { name, aud: token.aud };
    const list = readStringList(token.aud, childPath(at, 'aud'));
    if (list.length === 0) configError(childPath(at, 'aud'), 'must name at least one audience');
    return { name, aud: list };
  });
}

/** GitLab's default directory of a Pages site. */
const DEFAULT_PUBLISH = 'public';

/**
 * Whether the job deploys a Pages site, and from which directory: a job named `pages` (unless it says
 * `pages: false`), or one with `pages: true` or `pages: { publish }`; the old job key `publish:` too.
 */
export function readPages(name: string, job: YamlMap, at: (key: string) => ConfigPath): { publish: string } | undefined {
  const value = job.pages;
  const legacy = job.publish === undefined || job.publish === null ? undefined : readString(job.publish, at('publish'));
  if (value === false) return undefined;
  if (value === undefined || value === null) return name === 'pages' || legacy !== undefined ? { publish: legacy ?? DEFAULT_PUBLISH } : undefined;
  if (!isMap(value)) return readBoolean(value, at('pages')) ? { publish: legacy ?? DEFAULT_PUBLISH } : undefined;
  checkKeys(value, PAGES_KEYWORDS, at('pages'));
  const publish = value.publish === undefined || value.publish === null ? undefined : readString(value.publish, childPath(at('pages'), 'publish'));
  if (publish !== undefined && legacy !== undefined) configError(at('publish'), 'cannot be used together with pages: publish (publish: is its old form)');
  return { publish: (publish ?? legacy ?? DEFAULT_PUBLISH).replace(/^\.\//, '').replace(/\/+$/, '') || DEFAULT_PUBLISH };
}

/** Single-quotes `text` for a POSIX shell. */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * `run:` — CI/CD steps, as commands: a `script` step is its script, an `exec` step its command, a
 * sequence (`run:` inside) its steps in order; `env` is exported for the step. A step that runs a
 * step from elsewhere (`step:`) or an action needs GitLab's step runner: its command fails the job
 * saying so, rather than the job passing without it.
 */
export function readRunSteps(value: unknown, path: ConfigPath): string[] {
  if (!Array.isArray(value) || value.length === 0) configError(path, 'must be a list of steps');
  return value.flatMap((step, index) => stepCommands(step, childPath(path, String(index))));
}

function stepCommands(step: unknown, path: ConfigPath): string[] {
  const map = readMap(step, path);
  const env = map.env === undefined || map.env === null ? '' : envPrefix(readMap(map.env, childPath(path, 'env')), childPath(path, 'env'));
  const label = typeof map.name === 'string' ? map.name : path.key;
  if (typeof map.script === 'string') return [env === '' ? map.script : `(${env}${map.script})`];
  if (Array.isArray(map.run)) return map.run.flatMap((inner, index) => stepCommands(inner, childPath(childPath(path, 'run'), String(index))));
  if (isMap(map.exec)) {
    const command = readStringList(map.exec.command, childPath(childPath(path, 'exec'), 'command'));
    const dir = typeof map.exec.work_dir === 'string' ? `cd ${quote(map.exec.work_dir)} && ` : '';
    return [`(${env}${dir}exec ${command.map(quote).join(' ')})`];
  }
  const kind = map.step !== undefined ? 'step' : map.action !== undefined ? 'action' : undefined;
  if (kind === undefined) configError(path, 'must have script, exec, run, step or action');
  const message = `step ${label} (${kind}:) is not run locally: it needs GitLab's step runner`;
  return [`echo ${quote(message)} >&2; exit 1`];
}

function envPrefix(env: YamlMap, path: ConfigPath): string {
  return Object.entries(env)
    .map(([key, raw]) => {
      if (!TOKEN_NAME.test(key)) configError(childPath(path, key), 'is not a valid variable name');
      return `export ${key}=${quote(typeof raw === 'string' ? raw : String(raw))}; `;
    })
    .join('');
}
