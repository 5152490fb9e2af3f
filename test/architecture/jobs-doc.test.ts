/** docs/jobs.md lists every stage, feature flag and `info.features` entry of the code's tables, with its status. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FEATURE_FLAGS } from '../../src/agent/config/feature-flags.js';
import { STAGES } from '../../src/executors/common/stages.js';
import { FEATURES } from '../../src/protocol/v4/features.js';

const doc = readFileSync(new URL('../../docs/jobs.md', import.meta.url), 'utf8');
const row = (name: string): string | undefined => doc.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));

describe('docs/jobs.md', () => {
  it('has a row for every stage, feature flag and feature, saying what the table says', () => {
    for (const stage of STAGES) expect(row(stage.name), stage.name).toContain(stage.support.status === 'honoured' ? '| honoured' : '| not run:');
    for (const flag of FEATURE_FLAGS) expect(row(flag.name), flag.name).toContain(`| ${String(flag.default)} | ${flag.support.status}`);
    for (const [name, entry] of Object.entries(FEATURES)) {
      expect(row(name), name).toContain(`| ${String(entry.announced('shell'))} | ${String(entry.announced('docker'))} | ${String(entry.announced('kubernetes'))} |`);
    }
  });
});
