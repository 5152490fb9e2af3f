/**
 * The three log formats as an operator sees them, from real `run` and `run-once` processes
 * (`npm run build` first): standard error is a pipe here, as under journald, so no colours.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cli, NODE_CLI } from './cli.js';
import { startDaemon } from './daemon.js';
import { waitUntil, workDirs } from './helpers.js';

let t: TestServer;
beforeAll(async () => {
  t = await startTestServer();
});
afterAll(async () => {
  await t.close();
});

const ANSI = '\u001b[';

/** Runs one job through a `run` daemon whose config.toml has `log_format`; its standard error. */
async function daemonOutput(format: string, args: string[] = []): Promise<{ output: string; config: string }> {
  const d = await workDirs();
  const { token } = await t.registerRunner();
  const config = join(d.root, 'config.toml');
  await writeFile(
    config,
    `check_interval = 1\nlog_level = "info"\nlog_format = "${format}"\nsentry_dsn = "https://ignored.example"\n\n` +
      `[[runners]]\n  name = "logs"\n  url = "${t.url}"\n  token = "${token}"\n  builds_dir = "${d.builds}"\n  cache_dir = "${d.cache}"\n`,
  );
  const daemon = startDaemon(config, args);
  try {
    const p = await t.pipeline('build:\n  script:\n    - echo hi\n');
    await t.waitForJob(p.jobs[0]!.id, (v) => v.status === 'success', 30_000);
    await waitUntil(() => /Job succeeded/.test(daemon.output()), 30_000, 'the job logged as finished');
  } finally {
    await daemon.stop();
  }
  return { output: daemon.output(), config };
}

describe('log formats', () => {
  it('runner: one human line per event, GitLab Runner wording and prefixes, fields sorted, no colours off a terminal', async () => {
    const { output, config } = await daemonOutput('runner');
    const lines = output.trimEnd().split('\n');
    expect(output).not.toContain(ANSI);
    expect(lines.every((line) => !line.startsWith('{'))).toBe(true);
    // The config warning goes through the logger, with the file and line.
    expect(lines).toContain(`WARNING: ${config}:4: \`sentry_dsn\` is ignored: ci-runner reports no errors to Sentry`);
    const received = lines.find((line) => line.startsWith('Checking for jobs... received'));
    expect(received).toMatch(/^Checking for jobs\.\.\. received +component=job job=build jobId=\d+ repo_url=http:\/\/127\.0\.0\.1:\d+\/group\/project\.git runner=logs slot=\d+$/);
    expect(lines.find((line) => line.startsWith('Job succeeded'))).toMatch(/^Job succeeded +component=job duration_s=[\d.]+ finalStatus=200 jobId=\d+ runner=logs state=success$/);
    expect(lines).toContain('ci-runner stopped');
  });

  it('json: one object per line, string levels, ISO times, every key once', async () => {
    const { output, config } = await daemonOutput('json');
    const lines = output.trimEnd().split('\n');
    for (const line of lines) {
      const record = JSON.parse(line) as Record<string, unknown>;
      // A duplicate key would be collapsed by the parse, so the round trip would not give the line back.
      expect(JSON.stringify(record)).toBe(line);
      expect(Object.keys(record).slice(0, 3)).toEqual(['time', 'level', 'msg']);
      expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).toContain(record.level);
      expect(new Date(String(record.time)).toISOString()).toBe(record.time);
    }
    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(expect.objectContaining({ level: 'warn', msg: expect.stringContaining(`${config}:4: \`sentry_dsn\``) }));
    expect(records).toContainEqual(expect.objectContaining({ level: 'info', msg: 'ci-runner started', pid: expect.any(Number) }));
    expect(records).toContainEqual(expect.objectContaining({ msg: 'Job succeeded', state: 'success', runner: 'logs', jobId: expect.any(Number) }));
  });

  it('text: an ISO time and the level in front of every line, no colours off a terminal', async () => {
    const { output } = await daemonOutput('text');
    const lines = output.trimEnd().split('\n');
    expect(output).not.toContain(ANSI);
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/);
    expect(lines.some((line) => / WARN  \S+:4: `sentry_dsn`/.test(line))).toBe(true);
    expect(lines.some((line) => / INFO  Job succeeded +component=job /.test(line))).toBe(true);
  });

  it('--log-format wins over log_format in config.toml', async () => {
    const { output } = await daemonOutput('runner', ['--log-format', 'json']);
    for (const line of output.trimEnd().split('\n')) expect(JSON.parse(line)).toHaveProperty('level');
  });

  it('run-once takes --log-format and LOG_FORMAT', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const common = ['run-once', '--url', t.url, '--token', token, '--builds-dir', d.builds, '--cache-dir', d.cache, '--log-level', 'info', '--wait-timeout', '30s'];
    await t.pipeline('one:\n  script:\n    - echo one\n');
    const json = await cli(['--log-format', 'json', ...common]);
    expect(json.exitCode, json.all).toBe(0);
    // Log lines are JSON; run-once's closing summary ("Job N succeeded") is a result for the user, not a log line.
    const records = json.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(expect.objectContaining({ level: 'info', msg: 'Checking for jobs... received', job: 'one' }));

    await t.pipeline('two:\n  script:\n    - echo two\n');
    const text = await cli(common, { env: { LOG_FORMAT: 'text' } });
    expect(text.exitCode, text.all).toBe(0);
    expect(text.stderr).toMatch(/^\S+Z INFO  Checking for jobs\.\.\. received +component=job job=two /m);

    const bad = await cli(['--log-format', 'xml', ...common]);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/log-format/);
  });

  it('under journald (JOURNAL_STREAM names standard error) every line starts with its syslog priority', async () => {
    const d = await workDirs();
    const config = join(d.root, 'config.toml');
    await writeFile(config, 'sentry_dsn = "x"\n');
    const stderrOf = (journal: boolean): string => {
      const file = join(d.root, `stderr-${journal}`);
      const fd = openSync(file, 'w');
      try {
        const { dev, ino } = fstatSync(fd);
        const env = { ...process.env, ...(journal ? { JOURNAL_STREAM: `${dev}:${ino}` } : {}) };
        if (!journal) delete env.JOURNAL_STREAM;
        spawnSync(process.execPath, [...NODE_CLI, 'list', '-c', config], { stdio: ['ignore', 'ignore', fd], env });
      } finally {
        closeSync(fd);
      }
      return readFileSync(file, 'utf8');
    };
    expect(stderrOf(true)).toMatch(/^<4>WARNING: \S+:1: `sentry_dsn`/m);
    expect(stderrOf(false)).toMatch(/^WARNING: \S+:1: `sentry_dsn`/m);
  });
});
