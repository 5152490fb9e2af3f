/** The complete build payload of docs/protocol-v1.md §5.7, as a GitLab 8.17 server sends it. */
export function examplePayload(): Record<string, unknown> {
  return {
    id: 1042,
    ref: 'main',
    tag: false,
    sha: '9b2e41c07d5f83a6e1c4b7d29a0f6e35c8d1b4a7',
    status: 'running',
    name: 'test:unit',
    token: 'q9YtR2vL7mK4xN8bW1cZ',
    stage: 'test',
    project_id: 17,
    project_name: 'Web App',
    commands: 'npm ci\nnpm test -- --reporter dot',
    repo_url: 'http://gitlab-ci-token:q9YtR2vL7mK4xN8bW1cZ@ci.example.com/acme/web-app.git',
    before_sha: '4f0c2d8e6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d',
    allow_git_fetch: true,
    artifacts_expire_at: '2026-12-01T10:00:00.000Z',
    artifacts_file: { filename: 'artifacts.zip', size: 1234 },
    options: {
      image: 'node:6',
      services: ['postgres:9.5', 'redis:3'],
      artifacts: { name: 'coverage-$CI_BUILD_REF_NAME', paths: ['coverage/', 'reports/*.xml'], untracked: false, when: 'always', expire_in: '1 week' },
      cache: { key: '$CI_BUILD_REF_NAME', untracked: false, paths: ['node_modules/'] },
      dependencies: ['build:assets'],
      after_script: ['rm -rf tmp/secrets'],
      environment: { name: 'review', url: 'http://review.example.com', action: 'start' },
    },
    timeout: 3600,
    variables: [
      { key: 'CI', value: 'true', public: true },
      { key: 'CI_BUILD_TOKEN', value: 'q9YtR2vL7mK4xN8bW1cZ', public: false },
      { key: 'CI_RUNNER_DESCRIPTION', value: 'build-host-01', public: true },
      { key: 'NPM_TOKEN', value: 's3cr3t', public: false },
    ],
    depends_on_builds: [
      {
        id: 1040, ref: 'main', tag: false, sha: '9b2e41c07d5f83a6e1c4b7d29a0f6e35c8d1b4a7', status: 'success', name: 'build:assets',
        token: 'Hn3Pq8Rw2Ty6Ux0Vz4Ab', stage: 'build', project_id: 17, project_name: 'Web App',
        artifacts_file: { filename: 'artifacts.zip', size: 482133 },
      },
      {
        id: 1041, ref: 'main', tag: false, sha: '9b2e41c07d5f83a6e1c4b7d29a0f6e35c8d1b4a7', status: 'success', name: 'lint',
        token: 'Lm5Nb7Vc9Xz1Sa3Df5Gh', stage: 'build', project_id: 17, project_name: 'Web App',
      },
    ],
    credentials: [{ type: 'registry', url: 'registry.example.com', username: 'gitlab-ci-token', password: 'q9YtR2vL7mK4xN8bW1cZ' }],
  };
}

/** Every position in `value` (object keys and array elements, at any depth), as paths. */
export function positions(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [];
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  return entries.flatMap(([key, item]) => [[...prefix, key], ...positions(item, [...prefix, key])]);
}

/** A deep copy of `value` with `replacement` at `path`. */
export function withAt(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1) as string | number] = replacement;
  return copy;
}
