/**
 * The value types of `[runners.docker]` (docker-schema.ts) as GitLab Runner writes them and the docker
 * CLI takes them: sizes, CPU counts, volumes, tables of strings, services. An unset value of GitLab
 * Runner's (0 or "") reads as "not set".
 */
import { z } from 'zod';

export const stringList = z.array(z.string().min(1)).default([]);

export const stringMap = z.record(z.string().min(1), z.string()).default({});

export const pullPolicy = z.enum(['always', 'if-not-present', 'never'], { error: 'one of "always", "if-not-present", "never"' });

/** `/host:/ctr[:mode]`, `volume-name:/ctr[:mode]` or `/ctr` (a volume the executor provides). */
const VOLUME = /^(?:(?:\/[^:]*|[A-Za-z0-9][A-Za-z0-9_.-]*):)?\/[^:]*(?::[A-Za-z,]+)?$/;

export const volumeList = z.array(z.string().regex(VOLUME, 'a "/host/path:/container/path[:ro]" or "/container/path" string')).default([]);

/** A size as the docker CLI takes it: bytes, or a number with b, k, m or g. */
const SIZE = /^\d+(?:\.\d+)?[bkmgBKMG]?$/;

/** A size; "" or 0 (GitLab Runner's unset) is none. */
export const sizeString = z
  .union([z.string().regex(SIZE, 'a size such as "512m" or "2g" (b, k, m or g)'), z.literal(''), z.int().min(0)])
  .transform((v) => (v === '' || v === 0 ? undefined : String(v)))
  .optional();

/** A swap size, or -1 for unlimited swap. */
export const swapSize = z
  .union([z.string().regex(SIZE), z.literal(''), z.literal('-1'), z.int().min(-1)], { error: 'a size such as "1g", or -1 for unlimited swap' })
  .transform((v) => (v === '' || v === 0 ? undefined : String(v)))
  .optional();

/** CPUs as a number ("1.5"); "" is none. */
export const cpuCount = z
  .union([z.string().regex(/^\d+(?:\.\d+)?$/, 'a number of CPUs such as "1.5"'), z.literal(''), z.number().positive()])
  .transform((v) => (v === '' ? undefined : String(v)))
  .optional();

/** A cpuset: "0-3", "0,2". */
export const cpuSet = z
  .string()
  .regex(/^(?:\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)?$/, 'CPUs or memory nodes such as "0-3" or "0,2"')
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/** A plain string where "" is unset. */
export const optionalString = z
  .string()
  .transform((v) => (v === '' ? undefined : v))
  .optional();

/** An integer where 0 is unset. */
export const optionalInt = (min: number, max: number) =>
  z
    .int()
    .min(min)
    .max(max)
    .transform((v) => (v === 0 ? undefined : v))
    .optional();

/** Container path → tmpfs mount options (`rw,size=64m`). */
export const tmpfsTable = z.record(z.string().regex(/^\//, 'an absolute container path'), z.string()).default({});

/** `nofile = "1024:2048"`: a soft limit and an optional hard one. */
export const ulimitTable = z.record(z.string().regex(/^[a-z]+$/, 'a ulimit name such as "nofile"'), z.string().regex(/^-?\d+(?::-?\d+)?$/, 'a "soft" or "soft:hard" number')).default({});

/** GitLab's table form of a service (`[[runners.docker.services]]`). */
export const serviceTable = z.strictObject(
  {
    name: z.string({ error: 'the service image (required)' }).min(1, 'the service image (required)'),
    alias: z.string().min(1).optional(),
    entrypoint: z.array(z.string()).optional(),
    command: z.array(z.string()).optional(),
    environment: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*=/, 'a "NAME=value" string')).optional(),
  },
  { error: 'an image name string or a table with name, alias, entrypoint, command, environment' },
);

/** A plain string is shorthand for `{ name }`. */
export const serviceSchema = z.preprocess((value) => (typeof value === 'string' ? { name: value } : value), serviceTable);
