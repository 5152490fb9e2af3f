/**
 * `npm pack` from a clean checkout (the tracked files of this tree, no dist/) and the tarball
 * installed into a temporary prefix: the installed `ci-runner` must work on its own.
 */
import { copyFile, mkdir, mkdtemp, readdir, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NPM_QUIET = ['--no-audit', '--no-fund', '--loglevel=error'];

/** Copies the files git tracks (a clean checkout of the working tree), sharing node_modules for the build. */
async function cleanCheckout(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-checkout-'));
  const { stdout } = await execa('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT });
  for (const file of stdout.split('\0').filter(Boolean)) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await copyFile(join(ROOT, file), join(dir, file)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error; // deleted in the working tree but not yet from the index
    });
  }
  await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

/** Runs `command` until `line` appears on its stdout, then stops it with SIGTERM. */
async function waitForLine(
  command: string,
  args: string[],
  line: string,
  whileRunning: (output: string) => Promise<void> = async () => undefined,
): Promise<{ output: string; exitCode: number | undefined }> {
  const child = execa(command, args, { reject: false, all: true, stdin: 'ignore' });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`"${line}" not printed within 60 s; output:\n${output}`)), 60_000);
    child.all?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void child.then(() => reject(new Error(`exited before "${line}"; output:\n${output}`)));
  });
  try {
    await whileRunning(output);
  } finally {
    child.kill('SIGTERM');
  }
  const result = await child;
  return { output, exitCode: result.exitCode };
}

describe('npm package', () => {
  it('npm pack on a clean checkout builds dist/ and the installed ci-runner runs --version and serve', { timeout: 300_000 }, async () => {
    const checkout = await cleanCheckout();
    const packDir = await mkdtemp(join(tmpdir(), 'ci-runner-pack-'));
    await execa('npm', ['pack', '--pack-destination', packDir, ...NPM_QUIET], { cwd: checkout });
    const [tarball] = (await readdir(packDir)).filter((f) => f.endsWith('.tgz'));
    expect(tarball).toBeDefined();

    const listing = (await execa('tar', ['-tzf', join(packDir, tarball!)])).stdout.split('\n');
    expect(listing).toContain('package/dist/cli/main.js');
    expect(listing).toContain('package/packaging/ci-runner.service');
    expect(listing).toContain('package/config.example.toml');
    // --help names the installed copy of each command's docs page (src/cli/doc-pages.ts).
    expect(listing).toContain('package/docs/register.md');
    expect(listing.some((f) => f.startsWith('package/examples/'))).toBe(true);
    expect(listing.some((f) => f.startsWith('package/src/') || f.startsWith('package/test/'))).toBe(false);
    // The web page's browser modules and style sheet ship in the package (no CDN).
    expect(listing).toContain('package/dist/server/ui/client/main.js');
    expect(listing).toContain('package/dist/server/ui/static/style.css');

    const prefix = await mkdtemp(join(tmpdir(), 'ci-runner-prefix-'));
    await execa('npm', ['install', '--prefix', prefix, '--prefer-offline', '--omit=dev', ...NPM_QUIET, join(packDir, tarball!)]);
    const bin = join(prefix, 'node_modules', '.bin', 'ci-runner');
    const { version } = JSON.parse(await (await import('node:fs/promises')).readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect((await execa(bin, ['--version'])).stdout.trim()).toBe(version);

    const assets: number[] = [];
    const served = await waitForLine(bin, ['serve', '--port', '0'], 'Runners register at', async (output) => {
      const page = /Web page: +(http:\/\/\S+)\//.exec(output)?.[1];
      for (const path of ['/-/ui/assets/main.js', '/-/ui/assets/style.css', '/-/ui/vendor/ansi_up.js']) assets.push((await fetch(`${page}${path}`)).status);
    });
    expect(assets).toEqual([200, 200, 200]);
    expect(served.output).toMatch(/URL: +http:\/\/127\.0\.0\.1:\d+/);
    expect([0, 143]).toContain(served.exitCode); // 143: stopped by SIGTERM, as documented
  });
});
