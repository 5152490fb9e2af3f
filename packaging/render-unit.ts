/** Rewrites packaging/ci-runner.service from the unit template: `npx tsx packaging/render-unit.ts`. */
import { writeFileSync } from 'node:fs';
import { DEFAULT_UNIT_OPTIONS, renderUnit } from '../src/service/unit.js';

writeFileSync(new URL('./ci-runner.service', import.meta.url), renderUnit(DEFAULT_UNIT_OPTIONS));
