/**
 * A job's `release:` (GitLab's Entry::Release): what release the job makes once its script succeeded.
 * GitLab turns it into a `release` step of the job's payload whose script calls glab (or release-cli),
 * which the runner runs as its `step_release` stage; the server makes that script (server/api/v4).
 * Keys and checks as GitLab's: `tag_name` and `description` are required, `released_at` is an ISO 8601
 * time, `assets:links` name a URL each.
 */
import { RELEASE_KEYWORDS, RELEASE_LINK_KEYWORDS } from './keywords.js';
import { childPath, configError, type ConfigPath } from './parse-error.js';
import { checkKeys, isMap, readMap } from './parse-values.js';
import type { JobReleaseSpec, ReleaseLink } from './spec.js';

const LINK_TYPES = ['other', 'runbook', 'image', 'package'];
/** ISO 8601 date and time, as Ruby's DateTime.iso8601 reads a release time. */
const ISO_TIME = /^\d{4}-\d\d-\d\d(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?$/;

export function readRelease(value: unknown, path: ConfigPath): JobReleaseSpec {
  const map = readMap(value, path);
  checkKeys(map, RELEASE_KEYWORDS, path);
  const text = (key: string, required: boolean): string | undefined => {
    const item = map[key];
    if (item === undefined || item === null) {
      if (required) configError(childPath(path, key), 'is missing: a release needs one');
      return undefined;
    }
    if (typeof item !== 'string' || (required && item === '')) configError(childPath(path, key), required ? 'must be a non-empty string' : 'must be a string');
    return item;
  };
  const release: JobReleaseSpec = { tag_name: text('tag_name', true) ?? '', description: text('description', true) ?? '' };
  for (const key of ['tag_message', 'name', 'ref', 'released_at'] as const) {
    const item = text(key, false);
    if (item !== undefined && item !== '') release[key] = item;
  }
  if (release.released_at !== undefined && !ISO_TIME.test(release.released_at)) configError(childPath(path, 'released_at'), 'must be a valid datetime');
  const milestones = map.milestones;
  if (milestones !== undefined && milestones !== null) {
    const list = typeof milestones === 'string' ? [milestones] : milestones;
    if (!Array.isArray(list) || !list.every((m) => typeof m === 'string')) configError(childPath(path, 'milestones'), 'must be a string or a list of strings');
    if (list.length > 0) release.milestones = list as string[];
  }
  if (map.assets !== undefined && map.assets !== null) release.assets = { links: readLinks(map.assets, childPath(path, 'assets')) };
  return release;
}

function readLinks(value: unknown, path: ConfigPath): ReleaseLink[] {
  const assets = readMap(value, path);
  checkKeys(assets, ['links'], path);
  const links = assets.links;
  const at = childPath(path, 'links');
  if (!Array.isArray(links) || links.length === 0) configError(at, 'must be a non-empty list of links');
  return links.map((entry: unknown) => {
    if (!isMap(entry)) configError(at, 'must be a list of maps (name, url, …)');
    checkKeys(entry, RELEASE_LINK_KEYWORDS, at);
    const { name, url, filepath, direct_asset_path: directAssetPath, link_type: linkType } = entry;
    if (typeof name !== 'string' || name === '') configError(childPath(at, 'name'), 'must be a non-empty string');
    if (typeof url !== 'string' || !/^[a-z][a-z0-9+.-]*:\/\/\S+$/i.test(url)) configError(childPath(at, 'url'), 'must be a valid URL');
    if (linkType !== undefined && (typeof linkType !== 'string' || !LINK_TYPES.includes(linkType))) configError(childPath(at, 'link_type'), `must be one of ${LINK_TYPES.join(', ')}`);
    if (filepath !== undefined && typeof filepath !== 'string') configError(childPath(at, 'filepath'), 'must be a string');
    if (directAssetPath !== undefined && typeof directAssetPath !== 'string') configError(childPath(at, 'direct_asset_path'), 'must be a string');
    return {
      name,
      url,
      ...(typeof filepath === 'string' ? { filepath } : {}),
      ...(typeof directAssetPath === 'string' ? { direct_asset_path: directAssetPath } : {}),
      ...(typeof linkType === 'string' ? { link_type: linkType } : {}),
    };
  });
}
