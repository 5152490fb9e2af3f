import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { dockerSchema } from '../../src/agent/config/docker-schema.js';
import { appendRunner, loadConfig, parseConfig, removeRunners } from '../../src/agent/config/index.js';
import { configListenAddress } from '../../src/agent/config/schema.js';

const GOOD = `concurrent = 2
check_interval = 0
log_level = "debug"

[[runners]]
  name = "first"
  url = "http://127.0.0.1:8080/"
  token = "abcdef0123456789"
  executor = "shell"
  environment = [
    "A=1",
    "B=two words",
  ]
  [runners.cache]
    Type = "s3"

[[runners]]
  name = "second"
  url = "http://127.0.0.1:8080/"
  token = "0123456789abcdef"
  limit = 3
`;

describe('config file', () => {
  it('applies GitLab Runner meanings: check_interval <= 0 is 3 s, output_limit 0 is 4096 KiB', () => {
    const { config } = parseConfig(GOOD, 'config.toml');
    expect(config.concurrent).toBe(2);
    expect(config.check_interval).toBe(3);
    expect(config.runners).toHaveLength(2);
    expect(config.runners[0]?.output_limit).toBe(4096);
    expect(config.runners[0]?.environment).toEqual(['A=1', 'B=two words']);
    expect(config.runners[1]?.limit).toBe(3);
    expect(config.runners[1]?.shell).toBe('bash');
    expect(Object.isFrozen(config.runners[0])).toBe(true);
  });

  it('names the file and line of a wrong value and says what is expected', () => {
    const text = GOOD.replace('limit = 3', 'limit = -1');
    expect(() => parseConfig(text, '/etc/x.toml')).toThrow(/\/etc\/x\.toml:21: `runners\.limit`: .*>=0/);
  });

  it('names the line of a misspelt key of ours and suggests the right one', () => {
    const text = GOOD.replace('  limit = 3', '  limt = 3');
    expect(() => parseConfig(text, 'c.toml')).toThrow(/c\.toml:21: unknown key `limt` \(did you mean `limit`\?\)/);
  });

  it('reports each unknown key once', () => {
    const text = GOOD.replace('  limit = 3', '  limt = 3').replace('concurrent = 2', 'concurrent = 2\nconcurent = 3');
    let message = '';
    try {
      parseConfig(text, 'c.toml');
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.match(/limt/g)).toHaveLength(1);
    expect(message.match(/concurent/g)).toHaveLength(1);
    expect(message).not.toMatch(/Unrecognized/);
  });

  it('reads artifacts_extract_limit as a size with a unit (powers of 1024), 0 or absent meaning no limit', () => {
    const limit = (value: string): number | undefined =>
      parseConfig(GOOD.replace('limit = 3', `limit = 3\n  artifacts_extract_limit = ${value}`), 'c.toml').config.runners[1]?.artifacts_extract_limit;
    expect(parseConfig(GOOD, 'c.toml').config.runners[1]?.artifacts_extract_limit).toBe(0);
    expect(limit('0')).toBe(0);
    expect(limit('"500MB"')).toBe(500 * 1024 ** 2);
    expect(limit('"10 GiB"')).toBe(10 * 1024 ** 3);
    expect(limit('"1.5g"')).toBe(1.5 * 1024 ** 3);
  });

  it.each(['1024', '"1024"', '"lots"', '"-5MB"', 'true', '"5 PB"'])('refuses artifacts_extract_limit = %s on its line, saying what a size looks like', (value) => {
    const text = GOOD.replace('limit = 3', `limit = 3\n  artifacts_extract_limit = ${value}`);
    expect(() => parseConfig(text, 'c.toml')).toThrow(/c\.toml:22: `runners\.artifacts_extract_limit`: expected a size with a unit, such as "500MB" or "10GiB" .*or 0 for no limit/);
  });

  it('reports a wrong type of a global key on its line', () => {
    const text = GOOD.replace('concurrent = 2', 'concurrent = "two"');
    expect(() => parseConfig(text, 'c.toml')).toThrow(/c\.toml:1: `concurrent`/);
  });

  it('warns about GitLab Runner keys it does not use instead of failing', () => {
    const text = `sentry_dsn = "x"\n${GOOD.replace('  limit = 3', '  limit = 3\n  referees = "x"\n  [runners.custom_build_dir]\n    enabled = true')}`;
    const { warnings, config } = parseConfig(text, 'c.toml');
    expect(config.runners).toHaveLength(2);
    expect(warnings.join('\n')).toMatch(/c\.toml:1: `sentry_dsn`/);
    expect(warnings.join('\n')).toMatch(/c\.toml:23: `referees`/);
    expect(warnings.join('\n')).not.toMatch(/`custom_build_dir`/);
    expect(config.runners[1]?.custom_build_dir.enabled).toBe(true);
  });

  it('reads the get_sources keys, takes pre_clone_script as pre_get_sources_script with a warning, refuses both', () => {
    const keys = '  limit = 3\n  clone_url = "https://git.example.com"\n  pre_get_sources_script = "echo pre"\n  post_get_sources_script = "echo post"\n  safe_directory_checkout = false\n  clean_git_config = true';
    const { warnings, config } = parseConfig(GOOD.replace('  limit = 3', keys), 'c.toml');
    expect(warnings.filter((line) => /script|clone_url|safe_directory|clean_git/.test(line))).toEqual([]);
    expect(config.runners[1]).toMatchObject({ clone_url: 'https://git.example.com', pre_get_sources_script: 'echo pre', post_get_sources_script: 'echo post', safe_directory_checkout: false, clean_git_config: true });
    const old = parseConfig(GOOD.replace('  limit = 3', '  limit = 3\n  pre_clone_script = "echo old"\n  clean_git_config = false'), 'c.toml');
    expect(old.warnings.join('\n')).toMatch(/c\.toml:\d+: `pre_clone_script` is GitLab Runner's name before 17\.0 of `pre_get_sources_script`/);
    expect(old.warnings.join('\n')).toMatch(/`clean_git_config = false` is ignored/);
    expect(() => parseConfig(GOOD.replace('  limit = 3', '  limit = 3\n  pre_clone_script = "a"\n  pre_get_sources_script = "b"'), 'c.toml')).toThrow(/set pre_get_sources_script only/);
    expect(() => parseConfig(GOOD.replace('  limit = 3', '  limit = 3\n  clone_url = "file:///srv/git"'), 'c.toml')).toThrow(/clone_url/);
  });

  it('reads listen_address, and metrics_server as its older name', () => {
    expect(parseConfig(`listen_address = "127.0.0.1:9252"\n${GOOD}`, 'c.toml').config.listen_address).toBe('127.0.0.1:9252');
    const old = parseConfig(`metrics_server = ":9252"\n${GOOD}`, 'c.toml');
    expect(old.warnings.join('\n')).not.toContain('metrics_server');
    expect(configListenAddress(old.config)).toBe(':9252');
    expect(configListenAddress(parseConfig(`listen_address = "[::1]:0"\n${GOOD}`, 'c.toml').config)).toBe('[::1]:0');
    expect(() => parseConfig(`listen_address = "9252"\n${GOOD}`, 'c.toml')).toThrow(/c\.toml:1: `listen_address`: expected "host:port"/);
    expect(() => parseConfig(`listen_address = "h:70000"\n${GOOD}`, 'c.toml')).toThrow(/c\.toml:1: `listen_address`/);
  });

  it('points at the line and column of broken TOML', () => {
    expect(() => parseConfig('concurrent = 1\n[[runners]\n', 'c.toml')).toThrow(/c\.toml:2:\d+: not valid TOML/);
  });

  it('appends and removes runner entries, keeping comments, with mode 0600', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cfg-'));
    const path = join(dir, 'nested', 'config.toml');
    await appendRunner(path, { name: 'one', url: 'http://127.0.0.1:1/', token: 'tok-one-xxxx', executor: 'shell' });
    await appendRunner(path, { name: 'two', url: 'http://127.0.0.1:1/', token: 'tok-two-xxxx', executor: 'shell', limit: 2 });
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const loaded = await loadConfig(path);
    expect(loaded.config.runners.map((r) => r.name)).toEqual(['one', 'two']);
    const removed = await removeRunners(path, (r) => r.name === 'one');
    expect(removed).toEqual(['one']);
    const text = await readFile(path, 'utf8');
    expect(text).toContain('# ci-runner configuration');
    expect(parseConfig(text, path).config.runners.map((r) => r.name)).toEqual(['two']);
  });

  it('says how to create a config when the file is missing', async () => {
    await expect(loadConfig('/nonexistent/config.toml')).rejects.toThrow(/ci-runner register/);
  });

  it('loads the documented example config without warnings', async () => {
    const text = await readFile(new URL('../../config.example.toml', import.meta.url), 'utf8');
    const { config, warnings } = parseConfig(text, 'config.example.toml');
    expect(warnings).toEqual([]);
    expect(config.runners.length).toBeGreaterThan(0);
    // The documented docker runner uses every [runners.docker] key.
    const docker = config.runners.find((r) => r.executor === 'docker');
    expect(docker?.docker).toMatchObject({ image: 'debian:bookworm-slim', pull_policy: ['always', 'if-not-present'], services: [{ name: 'postgres:16' }, { name: 'redis:7', alias: 'cache' }] });
    const text2 = text.replace(/^(\s*)# (network_mode|host|user) = /gm, '$1$2 = ');
    const keys = Object.keys(parseConfig(text2, 'config.example.toml').config.runners.find((r) => r.executor === 'docker')!.docker);
    expect(new Set(keys)).toEqual(new Set(Object.keys(dockerSchema.shape)));
  });
});

