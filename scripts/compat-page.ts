/**
 * `npm run docs:compat`: writes docs/compatibility.md from the code's compatibility tables
 * (scripts/compat/render.ts). Run it after changing a table; the docs test fails until then.
 */
import { writeFile } from 'node:fs/promises';
import { renderCompatibilityPage } from './compat/render.js';

const target = new URL('../docs/compatibility.md', import.meta.url);
await writeFile(target, await renderCompatibilityPage());
process.stdout.write(`wrote ${target.pathname}\n`);
