import { readFile, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { DEFAULT_UNIT_OPTIONS, quoteExecArg, renderUnit, stopTimeoutFor } from '../../src/service/unit.js';
import { describeState, parseShow } from '../../src/service/systemd.js';

const analyze = await execa('systemd-analyze', ['--version'], { reject: false });
const haveAnalyze = analyze.exitCode === 0;
if (!haveAnalyze) console.log('skipping systemd-analyze checks: systemd-analyze is not installed (Debian package `systemd`)');

/** Writes `text` as `<name>.service` in a fresh dir and runs `systemd-analyze verify` on it. */
async function verify(text: string, name = 'ci-runner'): Promise<{ exitCode: number | undefined; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-unit-'));
  const path = join(dir, `${name}.service`);
  await writeFile(path, text);
  // Warnings go to the journal unless told otherwise when stderr is not a terminal.
  const result = await execa('systemd-analyze', ['verify', path], { reject: false, all: true, env: { SYSTEMD_LOG_TARGET: 'console' } });
  return { exitCode: result.exitCode, output: String(result.all ?? '') };
}

describe('systemd unit template', () => {
  it('packaging/ci-runner.service is the template rendered with the defaults (regenerate: npx tsx packaging/render-unit.ts)', async () => {
    const shipped = await readFile(new URL('../../packaging/ci-runner.service', import.meta.url), 'utf8');
    expect(shipped).toBe(renderUnit(DEFAULT_UNIT_OPTIONS));
  });

  it('starts the daemon with absolute paths and keeps drain semantics', () => {
    const text = renderUnit({ ...DEFAULT_UNIT_OPTIONS, user: 'builder', timeoutStopSec: stopTimeoutFor(600) });
    expect(text).toMatch(/^ExecStart=\/usr\/bin\/node --max-semi-space-size=1 --liftoff-only \/usr\/local\/lib\/node_modules\/ci-runner\/dist\/cli\/main\.js run --config \/etc\/ci-runner\/config\.toml --user builder$/m);
    expect(text).toMatch(/^KillSignal=SIGTERM$/m);
    // mixed: SIGTERM to the daemon only, so it drains its jobs; SIGKILL to everything only at the timeout.
    expect(text).toMatch(/^KillMode=mixed$/m);
    expect(text).toMatch(/^TimeoutStopSec=660$/m);
    expect(text).toMatch(/^ExecReload=\/bin\/kill -HUP \$MAINPID$/m);
    expect(text).toMatch(/^StartLimitBurst=\d+$/m);
    expect(text).toMatch(/^RestartSec=\d+$/m);
    expect(text).not.toMatch(/\{\{/);
  });

  it('gives systemd a stop timeout longer than shutdown_timeout', () => {
    for (const s of [0, 30, 59, 60, 61, 3600]) expect(stopTimeoutFor(s)).toBeGreaterThan(s);
  });

  it('quotes ExecStart words with spaces and escapes % and $', () => {
    expect(quoteExecArg('/opt/my runner/main.js')).toBe('"/opt/my runner/main.js"');
    expect(quoteExecArg('/etc/100%/c$x.toml')).toBe('/etc/100%%/c$$x.toml');
    expect(quoteExecArg('a"b')).toBe('"a\\"b"');
  });

  it.skipIf(!haveAnalyze)('systemd-analyze verify accepts the rendered unit, odd paths included', async () => {
    const plain = await verify(renderUnit(DEFAULT_UNIT_OPTIONS));
    expect(plain.output).toBe('');
    expect(plain.exitCode).toBe(0);
    const odd = await verify(renderUnit({ ...DEFAULT_UNIT_OPTIONS, service: 'ci-runner-2', cli: '/opt/my runner/100%/main.js', config: '/etc/ci runner/config.toml', user: 'build er' }), 'ci-runner-2');
    expect(odd.output).toBe('');
    expect(odd.exitCode).toBe(0);
  });

  it.skipIf(!haveAnalyze)('systemd-analyze verify does catch a broken unit (so the check above means something)', async () => {
    const broken = await verify(renderUnit(DEFAULT_UNIT_OPTIONS).replace(/^KillMode=mixed$/m, 'KillMode=sometimes'));
    expect(broken.output).toMatch(/kill mode/i);
  });
});

describe('service status', () => {
  it('maps systemd states to LSB status exit codes', () => {
    const show = (active: string, load = 'loaded') => describeState('ci-runner', parseShow(`LoadState=${load}\nActiveState=${active}\nSubState=x\nMainPID=42\n`));
    expect(show('active').exitCode).toBe(0);
    expect(show('active').line).toContain('pid 42');
    expect(show('reloading').exitCode).toBe(0);
    expect(show('inactive').exitCode).toBe(3);
    expect(show('failed').exitCode).toBe(3);
    expect(show('activating').exitCode).toBe(3);
    expect(show('inactive', 'not-found').exitCode).toBe(4);
  });
});
