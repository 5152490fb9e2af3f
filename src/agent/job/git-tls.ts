/**
 * The runner's TLS material for git (get_sources and its submodules): the PEM text goes to files in
 * the job's state dir (readable by the job user, who runs git), and git is pointed at them through
 * `http.<coordinator>.sslCAInfo`/`sslCert`/`sslKey` in its environment — scoped to the coordinator's
 * origin, so other hosts keep git's own trust, and never written to any git config file. The files
 * are removed once the sources are in place: the build script (in a container too, where the state
 * dir is mounted) never sees the client key.
 */
import { rm } from 'node:fs/promises';
import { writeNewFile } from '../../util/new-file.js';
import { join } from 'node:path';
import type { TlsMaterial } from '../../client/tls.js';
import type { RunAs } from '../../executors/run-as.js';
import { giveFilesToUser } from './job-user.js';

/** What git is told: the URL prefix the settings apply to and the files it reads. */
export interface GitTls {
  /** `scheme://host[:port]/` of the coordinator. */
  scope: string;
  caFile?: string;
  /**
   * Instead of `caFile`: a variable of the job's script that holds the CA file's path where the script
   * runs (the file variable CI_SERVER_TLS_CA_FILE, written by the custom executor's script), so git is
   * pointed at it as GitLab Runner's scripts point it (`http.<host>.sslCAInfo` = `$CI_SERVER_TLS_CA_FILE`).
   */
  caFileVariable?: string;
  certFile?: string;
  keyFile?: string;
}

/** The `-c`-style settings for `tls` (none when git needs no TLS help). */
export function gitTlsConfig(tls: GitTls | undefined): Array<[key: string, value: string]> {
  if (!tls) return [];
  const out: Array<[string, string]> = [];
  if (tls.caFile) out.push([`http.${tls.scope}.sslCAInfo`, tls.caFile]);
  if (tls.certFile && tls.keyFile) out.push([`http.${tls.scope}.sslCert`, tls.certFile], [`http.${tls.scope}.sslKey`, tls.keyFile]);
  return out;
}

/** git's environment overrides of the settings above, which beat any config (even `-c`). */
const ENV_OVERRIDES: ReadonlyArray<[env: string, setting: string, present: (tls: GitTls) => boolean]> = [
  ['GIT_SSL_CAINFO', 'sslCAInfo', (tls) => Boolean(tls.caFile ?? tls.caFileVariable)],
  ['GIT_SSL_CERT', 'sslCert', (tls) => Boolean(tls.certFile)],
  ['GIT_SSL_KEY', 'sslKey', (tls) => Boolean(tls.keyFile)],
];

/**
 * Shell lines, run after GIT_CONFIG_COUNT is exported, that turn a host's GIT_SSL_CAINFO (or
 * GIT_SSL_CERT/GIT_SSL_KEY) into the unscoped `http.*` setting: git lets the variable win over every
 * config, so it would hide the coordinator's CA; as a setting it still applies to every other host,
 * and the coordinator's URL-scoped one is more specific.
 */
export function gitTlsEnvLines(tls: GitTls | undefined): string[] {
  if (!tls) return [];
  const name = tls.caFileVariable;
  // Its value is the script's at run time; an unset or empty variable adds nothing.
  const fromVariable = name && /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? [`if [ -n "\${${name}:-}" ]; then export "GIT_CONFIG_KEY_$GIT_CONFIG_COUNT=http.${tls.scope}.sslCAInfo" "GIT_CONFIG_VALUE_$GIT_CONFIG_COUNT=$${name}"; GIT_CONFIG_COUNT=$((GIT_CONFIG_COUNT + 1)); fi`] : [];
  return [...fromVariable, ...ENV_OVERRIDES.filter(([, , present]) => present(tls)).map(([env, setting]) =>
    `if [ -n "\${${env}:-}" ]; then export "GIT_CONFIG_KEY_$GIT_CONFIG_COUNT=http.${setting}" "GIT_CONFIG_VALUE_$GIT_CONFIG_COUNT=$${env}"; GIT_CONFIG_COUNT=$((GIT_CONFIG_COUNT + 1)); unset ${env}; fi`,
  )];
}

/**
 * Where the job's script runs away from the runner (the custom executor): git is pointed at the job's
 * own CI_SERVER_TLS_CA_FILE, the runner's CA written where the script runs. The client certificate is
 * not handed on (the job's variables do not carry it). Undefined for a plain-http coordinator or no CA.
 */
export function gitTlsOfJobVariables(coordinatorUrl: string, material: TlsMaterial): GitTls | undefined {
  const url = new URL(coordinatorUrl);
  if (url.protocol !== 'https:' || !material.ca) return undefined;
  return { scope: `${url.protocol}//${url.host}/`, caFileVariable: 'CI_SERVER_TLS_CA_FILE' };
}

/**
 * Writes the material for git under `stateDir` (mode 0600, owned by the job user when there is one).
 * Returns undefined for a plain-http coordinator or no material; `remove` deletes the files.
 */
export async function writeGitTls(coordinatorUrl: string, material: TlsMaterial, stateDir: string, runAs?: RunAs): Promise<{ tls: GitTls; remove: () => Promise<void> } | undefined> {
  const url = new URL(coordinatorUrl);
  if (url.protocol !== 'https:' || (!material.ca && !material.cert)) return undefined;
  const tls: GitTls = { scope: `${url.protocol}//${url.host}/` };
  const files: string[] = [];
  const put = async (name: string, text: string): Promise<string> => {
    const path = join(stateDir, name);
    await writeNewFile(path, text, 0o600);
    files.push(path);
    return path;
  };
  if (material.ca) tls.caFile = await put('git-tls-ca.pem', material.ca);
  if (material.cert && material.key) {
    tls.certFile = await put('git-tls-cert.pem', material.cert);
    tls.keyFile = await put('git-tls-key.pem', material.key);
  }
  if (runAs) await giveFilesToUser(runAs, files);
  return { tls, remove: () => Promise.all(files.map((f) => rm(f, { force: true }))).then(() => undefined) };
}
