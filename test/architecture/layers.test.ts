/**
 * The layers of src/ (docs/architecture.md, checked by dependency-cruiser with .dependency-cruiser.mjs):
 * the tree as it is passes, and the check itself still catches what it is there for — an import that
 * climbs a layer, a circle, a module outside every layer — in a small tree made for the purpose.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/util/command.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const depcruise = join(root, 'node_modules/.bin/depcruise');
const config = join(root, '.dependency-cruiser.mjs');

async function check(cwd: string): Promise<{ ok: boolean; output: string }> {
  const result = await runCommand(depcruise, ['src', '--config', config, '--output-type', 'err'], { cwd });
  return { ok: result.exitCode === 0, output: `${result.stdout}${result.stderr}` };
}

const trees: string[] = [];
afterAll(async () => {
  await Promise.all(trees.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A throwaway project with these files under src/ (and a tsconfig like ours). */
async function tree(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'layers-'));
  trees.push(dir);
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, 'src', path)), { recursive: true });
    await writeFile(join(dir, 'src', path), text);
  }
  return dir;
}

describe('the layers of src/', () => {
  it('no import climbs a layer, no module or folder is in a circle, every module is in a layer', async () => {
    const { ok, output } = await check(root);
    expect(output).toContain('no dependency violations found');
    expect(ok).toBe(true);
  });

  it('the check refuses an executor importing the agent', async () => {
    const dir = await tree({
      'agent/agent.ts': 'export const agent = 1;\n',
      'executors/shell.ts': "import { agent } from '../agent/agent.js';\nexport const shell = agent;\n",
    });
    const { ok, output } = await check(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/layer-2-points-down: src\/executors\/shell\.ts → src\/agent\/agent\.ts/);
  });

  it('the check refuses a type-only import that climbs as well', async () => {
    const dir = await tree({
      'server/context.ts': 'export interface ServerContext { name: string }\n',
      'pipeline/create.ts': "import type { ServerContext } from '../server/context.js';\nexport type Made = ServerContext;\n",
    });
    const { ok, output } = await check(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/layer-3-points-down: src\/pipeline\/create\.ts → src\/server\/context\.ts/);
  });

  it('the check refuses two modules importing each other, and two folders of one layer', async () => {
    const dir = await tree({
      'util/a.ts': "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n",
      'util/b.ts': "import { a } from './a.js';\nexport const b = (): number => a() - 1;\n",
      'client/api.ts': "import type { Trace } from '../trace/trace.js';\nexport type Api = Trace;\n",
      'trace/trace.ts': "import type { Api } from '../client/api.js';\nexport interface Trace { api?: Api }\n",
    });
    const { ok, output } = await check(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/no-circle: src\/util\/(a|b)\.ts/);
    expect(output).toMatch(/no-folder-circle: src\/(client|trace) →/);
  });

  it('the check refuses a module that is in no layer', async () => {
    const dir = await tree({
      'loose.ts': "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;\n",
      'util/uses.ts': "import { read } from '../loose.js';\nexport const uses = read;\n",
    });
    const { ok, output } = await check(dir);
    expect(ok).toBe(false);
    expect(output).toMatch(/in-a-layer: src\/loose\.ts/);
    expect(output).toMatch(/to-a-layer: src\/util\/uses\.ts → src\/loose\.ts/);
  });
});
