import { describe, expect, it } from 'vitest';
import { parseBuildPayload } from '../../src/protocol/build-payload.js';
import { examplePayload, positions, withAt } from './payload-example.js';

/** Positions the runner cannot do without; everything else in §5.7 may be null. */
const NEEDED = new Map<string, RegExp>([
  ['id', /^id: missing or null/],
  ['ref', /^ref: missing or null/],
  ['sha', /^sha: missing or null/],
  ['name', /^name: missing or null/],
  ['token', /^token: missing or null/],
  ['project_id', /^project_id: missing or null/],
  ['repo_url', /^repo_url: missing or null/],
  // build:assets has artifacts and is listed in options.dependencies, so it is downloaded.
  ['depends_on_builds.0.id', /^depends_on_builds\.0\.id: missing \(needed to download the artifacts of "build:assets"\)/],
  ['depends_on_builds.0.token', /^depends_on_builds\.0\.token: missing \(needed to download the artifacts of "build:assets"\)/],
]);

const every = positions(examplePayload()).map((path) => path.join('.'));

describe('build payload: null means absent', () => {
  it('accepts the complete example of docs/protocol-v1.md §5.7', () => {
    const result = parseBuildPayload(examplePayload());
    expect(result.ok).toBe(true);
  });

  it('accepts artifacts_expire_at: null (a build with artifacts but no expiry)', () => {
    const result = parseBuildPayload({ ...examplePayload(), artifacts_expire_at: null });
    expect(result.ok && result.build.artifacts_expire_at).toBeUndefined();
  });

  it.each(every.filter((path) => !NEEDED.has(path)))('runs the build with null at %s', (path) => {
    const result = parseBuildPayload(withAt(examplePayload(), path.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k)), null));
    expect(result.ok ? 'ok' : result.message).toBe('ok');
  });

  it.each([...NEEDED])('refuses the build with null at %s, naming it', (path, message) => {
    const result = parseBuildPayload(withAt(examplePayload(), path.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k)), null));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.message).toMatch(message);
      // The build can still be reported failed unless its id or token is what is missing.
      if (path !== 'id') expect(result.id).toBe(1042);
    }
  });

  it('takes the documented defaults when every optional field is null at once', () => {
    const payload = examplePayload();
    for (const key of Object.keys(payload)) if (!NEEDED.has(key)) payload[key] = null;
    const result = parseBuildPayload(payload);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.build).toMatchObject({ tag: false, stage: '', commands: '', before_sha: '', allow_git_fetch: false, options: {}, timeout: 0, variables: [], depends_on_builds: [], credentials: [] });
    expect(result.build.artifacts_expire_at).toBeUndefined();
    expect(result.build.artifacts_file).toBeUndefined();
  });

  it('reads a null variable value as empty and a variable without public as secret, and drops one without a key', () => {
    const result = parseBuildPayload({
      ...examplePayload(),
      variables: [{ key: 'CI_RUNNER_DESCRIPTION', value: null, public: true }, { key: 'TRIGGERED', value: 'abc', public: null }, { key: null, value: 'x', public: true }, null, { key: 'N', value: 5, public: true }],
    });
    expect(result.ok && result.build.variables).toEqual([
      { key: 'CI_RUNNER_DESCRIPTION', value: '', public: true },
      { key: 'TRIGGERED', value: 'abc', public: false },
      { key: 'N', value: '5', public: true },
    ]);
  });

  it('does not check the size of a dependency whose artifacts_file.size is null', () => {
    const payload = examplePayload();
    const result = parseBuildPayload(withAt(payload, ['depends_on_builds', 0, 'artifacts_file', 'size'], null));
    expect(result.ok && result.build.depends_on_builds[0]?.artifacts_file).toEqual({ filename: 'artifacts.zip' });
  });

  it('needs no id or token of a dependency whose artifacts it does not download', () => {
    const payload = examplePayload();
    const noToken = withAt(payload, ['depends_on_builds', 1], { id: null, name: 'lint', token: null, ref: null, tag: null, sha: null, status: null });
    expect(parseBuildPayload(noToken).ok).toBe(true);
    // Not listed in options.dependencies: not downloaded, so not needed either.
    const filtered = withAt(payload, ['depends_on_builds', 1], { name: 'lint', artifacts_file: { filename: 'a.zip', size: 3 } });
    expect(parseBuildPayload(filtered).ok).toBe(true);
    const everything = withAt(filtered, ['options', 'dependencies'], null);
    const result = parseBuildPayload(everything);
    expect(result.ok ? 'ok' : result.message).toMatch(/^depends_on_builds\.1\.id: missing \(needed to download the artifacts of "lint"\); depends_on_builds\.1\.token: missing/);
  });
});

describe('build payload: fields the runner does not use never refuse a build', () => {
  it('keeps unknown fields at every level', () => {
    const payload = examplePayload();
    const extra = { added_in: '9.5', nested: { deep: [1, null, { x: null }] } };
    let withExtras: unknown = { ...payload, ...extra };
    for (const path of [['options'], ['options', 'artifacts'], ['options', 'cache'], ['variables', 0], ['depends_on_builds', 0], ['depends_on_builds', 0, 'artifacts_file'], ['credentials', 0]]) {
      withExtras = withAt(withExtras, [...path, 'future_key'], extra);
    }
    const result = parseBuildPayload(withExtras);
    expect(result.ok ? 'ok' : result.message).toBe('ok');
    if (result.ok) expect((result.build as unknown as Record<string, unknown>).added_in).toBe('9.5');
  });

  it.each([
    ['status', 'waiting_for_resource'],
    ['project_name', 42],
    ['artifacts_expire_at', 1_700_000_000],
    ['artifacts_file', 'artifacts.zip'],
    ['credentials', 'none'],
    ['credentials.0', 'registry.example.com'],
    ['credentials.0.password', 7],
    ['depends_on_builds.1.status', 'blocked'],
    ['depends_on_builds.1.project_id', '17'],
    ['depends_on_builds.1.tag', 'false'],
    ['depends_on_builds.0.artifacts_file.size', '482133'],
    ['options.image', ['node']],
    ['options.services', 'postgres'],
    ['options.environment', 'review'],
    ['options.environment.url', 3],
  ])('runs the build with an unreadable %s', (path, value) => {
    const result = parseBuildPayload(withAt(examplePayload(), path.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k)), value));
    expect(result.ok ? 'ok' : result.message).toBe('ok');
  });

  it('reads a 9.x image and services written as objects by their names', () => {
    const result = parseBuildPayload({
      ...examplePayload(),
      options: { image: { name: 'ruby:2.4', entrypoint: [''] }, services: [{ name: 'postgres:9.6', alias: 'db' }, 'redis:3'] },
    });
    expect(result.ok && result.build.options).toMatchObject({ image: 'ruby:2.4', services: ['postgres:9.6', 'redis:3'] });
  });

  it("keeps an image map's entrypoint for the docker executor, and drops one it cannot read", () => {
    const parse = (options: Record<string, unknown>) => {
      const result = parseBuildPayload({ ...examplePayload(), options });
      return result.ok ? result.build.options : result.message;
    };
    expect(parse({ image: { name: 'ruby:2.4', entrypoint: [''] } })).toMatchObject({ image: 'ruby:2.4', imageEntrypoint: [''] });
    expect(parse({ image: { name: 'ruby:2.4', entrypoint: ['/bin/sh', '-c'] } })).toMatchObject({ imageEntrypoint: ['/bin/sh', '-c'] });
    expect(parse({ image: { name: 'ruby:2.4', entrypoint: '/bin/sh' } })).not.toHaveProperty('imageEntrypoint');
    expect(parse({ image: 'ruby:2.4' })).not.toHaveProperty('imageEntrypoint');
    // Not a wire key: a server cannot set it without the map.
    expect(parse({ image: 'ruby:2.4', imageEntrypoint: ['/evil'] })).not.toHaveProperty('imageEntrypoint');
  });
});

describe('build payload: fields the runner uses must have their types', () => {
  it.each([
    ['timeout', '3600', /^timeout: expected/],
    ['tag', 'false', /^tag: expected boolean, got string/],
    ['commands', ['npm ci'], /^commands: expected string, got array/],
    ['options', 'image: ruby', /^options: expected object, got string/],
    ['options.artifacts.paths', 'coverage/', /^options\.artifacts\.paths: expected array, got string/],
    ['options.artifacts.when', 'sometimes', /^options\.artifacts\.when: /],
    ['options.dependencies', 'build:assets', /^options\.dependencies: expected array/],
    ['options.after_script.0', 5, /^options\.after_script\.0: expected string, got number/],
    ['variables.1.key', 3, /^variables\.1\.key: expected string, got number/],
    ['sha', 'abc', /^sha: must have at least 8 characters/],
  ])('refuses a build whose %s has the wrong type, naming it', (path, value, message) => {
    const result = parseBuildPayload(withAt(examplePayload(), path.split('.').map((k) => (/^\d+$/.test(k) ? Number(k) : k)), value));
    expect(result.ok ? 'ok' : result.message).toMatch(message);
  });

  it('never echoes a refused value (it may be a secret)', () => {
    const result = parseBuildPayload({ ...examplePayload(), token: 12345678 });
    expect(result.ok ? 'ok' : result.message).toBe('token: expected string, got number');
  });
});
