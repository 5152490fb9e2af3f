/**
 * Kubernetes' strategic merge patch of a pod spec (what `kubectl patch --type strategic` and GitLab
 * Runner's `patch_type = "strategic"` do): maps merge key by key, `null` removes a key, and the lists
 * the pod spec's types mark `patchStrategy: merge` merge element by element on their `patchMergeKey`
 * (containers by `name`, volumes by `name`, a container's env by `name`, its volumeMounts by
 * `mountPath`, …); other lists are replaced whole. The directives work as there: `$patch: replace`,
 * `$patch: delete` and `$patch: merge` on a map or a list element, `$retainKeys`,
 * `$deleteFromPrimitiveList/<list>` and `$setElementOrder/<list>`. The merge keys are the pod spec's,
 * from Kubernetes' API types (core/v1 PodSpec and Container).
 */

type Json = unknown;
type Obj = Record<string, Json>;

/** A map's lists that merge, by field: their merge key, and the fields of their elements. */
interface MapShape {
  readonly [field: string]: { readonly key: string; readonly item?: MapShape };
}

const CONTAINER: MapShape = {
  ports: { key: 'containerPort' },
  env: { key: 'name' },
  volumeMounts: { key: 'mountPath' },
  volumeDevices: { key: 'devicePath' },
};

const POD_SPEC: MapShape = {
  volumes: { key: 'name' },
  initContainers: { key: 'name', item: CONTAINER },
  containers: { key: 'name', item: CONTAINER },
  ephemeralContainers: { key: 'name', item: CONTAINER },
  imagePullSecrets: { key: 'name' },
  hostAliases: { key: 'ip' },
  topologySpreadConstraints: { key: 'topologyKey' },
  resourceClaims: { key: 'name' },
  schedulingGates: { key: 'name' },
};

const PATCH = '$patch';
const RETAIN = '$retainKeys';
const DELETE_FROM = '$deleteFromPrimitiveList/';
const ORDER = '$setElementOrder/';

/** `spec` (a pod spec as JSON) with `patch` applied. */
export function strategicMergePatch(spec: Json, patch: Json): Json {
  if (!isObj(patch)) throw new Error('a strategic merge patch of a pod spec is a map');
  return mergeMap(isObj(spec) ? spec : {}, patch, POD_SPEC) ?? {};
}

/** Undefined: the map is deleted. */
function mergeMap(original: Obj, patch: Obj, shape: MapShape | undefined): Obj | undefined {
  const directive = patch[PATCH];
  if (directive === 'delete') return undefined;
  if (directive === 'replace') return withoutDirectives(patch);
  if (directive !== undefined && directive !== 'merge') throw new Error(`unknown ${PATCH} directive ${JSON.stringify(directive)}`);
  const out: Obj = { ...original };
  for (const [field, value] of Object.entries(patch)) {
    if (field.startsWith(DELETE_FROM)) {
      const list = field.slice(DELETE_FROM.length);
      const remove = Array.isArray(value) ? value : [];
      if (Array.isArray(out[list])) out[list] = (out[list] as Json[]).filter((item) => !remove.some((r) => equal(r, item)));
      continue;
    }
    if (field.startsWith('$')) continue;
    if (value === null) {
      delete out[field];
      continue;
    }
    const list = shape?.[field];
    if (Array.isArray(value) && list) out[field] = mergeList(Array.isArray(out[field]) ? (out[field] as Json[]) : [], value, list.key, list.item);
    else if (isObj(value) && isObj(out[field])) {
      const merged = mergeMap(out[field], value, undefined);
      if (merged === undefined) delete out[field];
      else out[field] = merged;
    } else if (isObj(value)) out[field] = mergeMap({}, value, undefined) ?? {};
    else out[field] = value;
  }
  for (const [field, order] of Object.entries(patch)) {
    if (!field.startsWith(ORDER) || !Array.isArray(order)) continue;
    const list = field.slice(ORDER.length);
    const key = shape?.[list]?.key;
    if (Array.isArray(out[list])) out[list] = reorder(out[list] as Json[], order, key);
  }
  const retain = patch[RETAIN];
  if (Array.isArray(retain)) for (const field of Object.keys(out)) if (!retain.includes(field)) delete out[field];
  return out;
}

/** Elements merged on `key`: a patch element replaces none, it merges into the one with its key. */
function mergeList(original: Json[], patch: Json[], key: string, item: MapShape | undefined): Json[] {
  if (patch.some((e) => isObj(e) && e[PATCH] === 'replace')) {
    return patch.filter((e) => !(isObj(e) && e[PATCH] === 'replace')).map((e) => (isObj(e) ? withoutDirectives(e) : e));
  }
  let out = [...original];
  for (const element of patch) {
    if (!isObj(element)) {
      if (!out.some((e) => equal(e, element))) out.push(element);
      continue;
    }
    if (!(key in element)) throw new Error(`a list element without its merge key "${key}": ${JSON.stringify(element)}`);
    const at = out.findIndex((e) => isObj(e) && equal(e[key], element[key]));
    if (element[PATCH] === 'delete') {
      out = out.filter((e) => !(isObj(e) && equal(e[key], element[key])));
      continue;
    }
    if (at < 0) out.push(mergeMap({}, element, item) ?? element);
    else {
      const merged = mergeMap(out[at] as Obj, element, item);
      if (merged === undefined) out.splice(at, 1);
      else out[at] = merged;
    }
  }
  return out;
}

/** `list` in the order `order` names (by merge key, or by value for primitives); others after. */
function reorder(list: Json[], order: Json[], key: string | undefined): Json[] {
  const id = (e: Json): Json => (key && isObj(e) ? e[key] : e);
  const wanted = order.map((o) => (key && isObj(o) ? o[key] : o));
  const rank = (e: Json): number => {
    const i = wanted.findIndex((w) => equal(w, id(e)));
    return i < 0 ? wanted.length : i;
  };
  return [...list].sort((a, b) => rank(a) - rank(b));
}

function withoutDirectives(map: Obj): Obj {
  return Object.fromEntries(Object.entries(map).filter(([field]) => !field.startsWith('$')));
}

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function equal(a: Json, b: Json): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
