/**
 * `[[runners.kubernetes.pod_spec]]`: patches of the generated pod spec, applied in order as GitLab
 * Runner 19 applies them when FF_USE_ADVANCED_POD_SPEC_CONFIGURATION is on: `patch` (or the file
 * `patch_path`, read for each job) as YAML or JSON, of `patch_type` `strategic` (the default: maps
 * merged, lists of containers, volumes, env, … merged by their keys, strategic-merge-patch.ts), `merge`
 * (RFC 7386) or `json` (RFC 6902). What a patch sets that the pod spec has no field for is dropped,
 * as Kubernetes' own types drop it, with a warning.
 */
import { readFile } from 'node:fs/promises';
import type { V1PodSpec } from '@kubernetes/client-node';
// The library's own (de)serializer, which its API calls use: not re-exported by its index.
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { parse as parseYaml } from 'yaml';
import { ExecutorSetupError } from '../types.js';
import type { PodSpecPatchOptions } from './options.js';
import { strategicMergePatch } from './strategic-merge-patch.js';

type Json = unknown;

/** `spec` with every patch applied; `warn` hears of fields the pod spec does not have. */
export async function patchPodSpec(spec: V1PodSpec, patches: readonly PodSpecPatchOptions[], warn: (line: string) => void): Promise<V1PodSpec> {
  let json = ObjectSerializer.serialize(spec, 'V1PodSpec', '') as Json;
  for (const patch of patches) json = await applyOne(json, patch);
  const typed = ObjectSerializer.deserialize(json, 'V1PodSpec', '') as V1PodSpec;
  const dropped = droppedPaths(json, ObjectSerializer.serialize(typed, 'V1PodSpec', '') as Json, 'spec');
  if (dropped.length > 0) warn(`WARNING: pod_spec: ${dropped.join(', ')} ${dropped.length === 1 ? 'is not a field' : 'are not fields'} of the Kubernetes pod spec; dropped`);
  return typed;
}

async function applyOne(json: Json, patch: PodSpecPatchOptions): Promise<Json> {
  const fail = (what: string, error: unknown): never => {
    throw new ExecutorSetupError('POD_SPEC_PATCH', `pod_spec "${patch.name}": ${what}: ${(error as Error).message}`, { cause: error });
  };
  let text = patch.patch ?? '';
  if (patch.patch_path) text = await readFile(patch.patch_path, 'utf8').catch((error: unknown) => fail(`loading patch file ${patch.patch_path}`, error));
  let body: Json;
  try {
    body = parseYaml(text) as Json;
  } catch (error) {
    return fail('converting patch to json', error);
  }
  try {
    switch (patch.patch_type) {
      case 'json': {
        const { default: jsonPatch } = await import('fast-json-patch');
        if (!Array.isArray(body)) throw new Error('a json patch is a list of operations');
        return jsonPatch.applyPatch(structuredClone(json), body as never, true, false).newDocument as Json;
      }
      case 'merge':
        return mergePatch(json, body);
      case 'strategic':
        return strategicMergePatch(json, body);
    }
  } catch (error) {
    return fail(`applying the ${patch.patch_type} patch`, error);
  }
}

/** RFC 7386: objects merge, `null` removes, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** Paths present in `patched` but gone after the round trip through the pod spec's types. */
function droppedPaths(patched: Json, typed: Json, path: string): string[] {
  if (Array.isArray(patched)) return Array.isArray(typed) ? patched.flatMap((item, i) => droppedPaths(item, typed[i], `${path}[${i}]`)) : [];
  if (!isObject(patched)) return [];
  const kept = isObject(typed) ? typed : {};
  return Object.entries(patched).flatMap(([key, value]) => (key in kept ? droppedPaths(value, kept[key], `${path}.${key}`) : value === undefined ? [] : [`${path}.${key}`]));
}

export function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
