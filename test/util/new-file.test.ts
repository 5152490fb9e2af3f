import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeNewFile } from '../../src/util/new-file.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function dir(): Promise<string> {
  const made = await mkdtemp(join(tmpdir(), 'new-file-'));
  dirs.push(made);
  return made;
}

describe('writeNewFile', () => {
  it('writes a new file with exactly the mode asked for, the umask notwithstanding', async () => {
    const path = join(await dir(), 'script');
    const before = process.umask(0o077);
    try {
      await writeNewFile(path, 'echo hi\n', 0o755);
    } finally {
      process.umask(before);
    }
    expect(await readFile(path, 'utf8')).toBe('echo hi\n');
    expect((await stat(path)).mode & 0o777).toBe(0o755);
  });

  it('replaces a file that is there, whatever its mode', async () => {
    const path = join(await dir(), 'record');
    await writeFile(path, 'old and longer');
    await chmod(path, 0o400);
    await writeNewFile(path, 'new', 0o600);
    expect(await readFile(path, 'utf8')).toBe('new');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it('replaces a link planted at the path, leaving what it points at alone', async () => {
    const base = await dir();
    const target = join(base, 'target');
    await writeFile(target, 'precious');
    const path = join(base, 'config');
    await symlink(target, path);
    await writeNewFile(path, 'written', 0o644);
    expect(await readFile(target, 'utf8')).toBe('precious');
    expect(await readFile(path, 'utf8')).toBe('written');
    const dangling = join(base, 'dangling');
    await symlink(join(base, 'nowhere'), dangling);
    await writeNewFile(dangling, 'x', 0o644);
    await expect(stat(join(base, 'nowhere'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a directory at the path unless told to replace it', async () => {
    const base = await dir();
    const path = join(base, 'config');
    await mkdir(join(path, 'inside'), { recursive: true });
    await expect(writeNewFile(path, 'x', 0o644)).rejects.toThrow();
    expect((await stat(join(path, 'inside'))).isDirectory()).toBe(true);
    await writeNewFile(path, 'x', 0o644, { replaceDir: true });
    expect(await readFile(path, 'utf8')).toBe('x');
  });
});
