/**
 * `[runners.custom_build_dir]`: whether a job may choose its project dir with GIT_CLONE_PATH (within
 * the builds dir). Unset, GitLab Runner's per-executor default applies: on for docker and kubernetes,
 * off for shell (run-job's project-dir.ts).
 */
import { z } from 'zod';
import type { RunnerSection } from './section.js';

export const customBuildDirSection = {
  key: 'custom_build_dir',
  schema: z.strictObject({ enabled: z.boolean().optional() }).prefault({}),
  keys: { known: ['enabled'], ignored: new Set<string>() },
} as const satisfies RunnerSection;
