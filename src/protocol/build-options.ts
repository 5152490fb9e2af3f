/**
 * Schema of the build payload's `options` (docs/protocol-v1.md §5.3, §5.4), applied after `null`s were
 * dropped (json-nulls.ts). Keys the shell runner acts on (`artifacts`, `cache`, `dependencies`,
 * `after_script`) must have their documented types: a wrong one refuses the build, naming the key,
 * because running the job without them would do something the user did not ask for. Keys it does not
 * act on (`image`, `services`: docker executors only; `environment`: removed before use) never
 * refuse a build: what cannot be read is dropped. Unknown keys are kept. An image written as a map
 * (`{ "name": …, "entrypoint": […] }`, as a server passes `.gitlab-ci.yml`'s `image:` on) gives
 * `image` its name and `imageEntrypoint` its entrypoint (ours, not a wire key).
 */
import { z } from 'zod';

const stringList = z.array(z.string());

/** A docker image as 8.x (`"ruby:2.1"`) or 9.x (`{ "name": "ruby:2.1", … }`) writes it, as its name. */
const imageName = z
  .union([z.string(), z.looseObject({ name: z.string() }).transform((image) => image.name)])
  .optional()
  .catch(undefined);

const imageNames = z
  .array(z.unknown())
  .transform((items) => items.flatMap((item) => {
    const name = imageName.parse(item);
    return name === undefined ? [] : [name];
  }))
  .optional()
  .catch(undefined);

const artifactsSchema = z.looseObject({
  name: z.string().optional(),
  paths: stringList.optional(),
  untracked: z.boolean().optional(),
  when: z.enum(['on_success', 'on_failure', 'always']).optional(),
  expire_in: z.string().optional(),
  exclude: stringList.optional(),
});

const cacheSchema = z.looseObject({
  key: z.string().optional(),
  paths: stringList.optional(),
  untracked: z.boolean().optional(),
  // Expanded by the runner (`policy: $CACHE_POLICY`); checked then, as GitLab Runner does.
  policy: z.string().optional(),
  when: z.enum(['on_success', 'on_failure', 'always']).optional(),
  fallback_keys: stringList.optional(),
});

const environmentSchema = z
  .looseObject({
    name: z.string().optional().catch(undefined),
    url: z.string().optional().catch(undefined),
    action: z.string().optional().catch(undefined),
  })
  .optional()
  .catch(undefined);

const isMap = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export const optionsSchema = z.preprocess((raw) => {
  if (!isMap(raw)) return raw;
  const { imageEntrypoint: _ours, ...options } = raw;
  // An entrypoint that cannot be read is dropped, like the rest of `image`.
  const entrypoint = isMap(raw.image) ? stringList.safeParse(raw.image.entrypoint) : undefined;
  return entrypoint?.success ? { ...options, imageEntrypoint: entrypoint.data } : options;
}, z.looseObject({
  image: imageName,
  imageEntrypoint: stringList.optional(),
  services: imageNames,
  artifacts: artifactsSchema.optional(),
  cache: z.union([cacheSchema, z.array(cacheSchema)]).optional(),
  dependencies: stringList.optional(),
  after_script: stringList.optional(),
  script: stringList.optional(),
  environment: environmentSchema,
}));
