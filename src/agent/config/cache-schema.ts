/** `[runners.cache]`: accepted as any table now (GitLab Runner's distributed cache), given meaning by a later issue. */
import { z } from 'zod';
import type { RunnerSection } from './section.js';

export const cacheSection = {
  key: 'cache',
  schema: z.record(z.string(), z.unknown()).optional(),
} as const satisfies RunnerSection;
