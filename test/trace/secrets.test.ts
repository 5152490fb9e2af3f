import { describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { collectSecrets, urlPasswords } from '../../src/trace/secrets.js';

function build(overrides: Partial<BuildPayload> = {}): BuildPayload {
  return {
    id: 7, ref: 'main', tag: false, sha: 'a'.repeat(40), status: 'running', name: 'test', token: 'build-token-123',
    stage: 'test', project_id: 1, project_name: 'p', commands: 'echo hi',
    repo_url: 'http://gitlab-ci-token:build-token-123@127.0.0.1:1/group/project.git',
    before_sha: '0'.repeat(40), allow_git_fetch: true, options: {}, timeout: 3600,
    variables: [], depends_on_builds: [], credentials: [], ...overrides,
  };
}

describe('collectSecrets', () => {
  it('masks the build token, the runner token, non-public variables and URL passwords', () => {
    const secrets = collectSecrets(
      build({
        variables: [
          { key: 'PUBLIC', value: 'visible-value', public: true },
          { key: 'SECRET', value: 'hidden-value', public: false },
          { key: 'SHORT', value: 'ab', public: false },
          { key: 'MIRROR', value: 'https://bot:p%40ss@mirror.example/x', public: true },
        ],
        credentials: [{ type: 'registry', url: 'registry.example', username: 'u', password: 'registry-pw' }],
      }),
      'runner-token-xyz',
      ['extra-secret'],
    );
    expect(secrets).toEqual(
      expect.arrayContaining(['build-token-123', 'runner-token-xyz', 'extra-secret', 'hidden-value', 'p%40ss', 'p@ss', 'registry-pw']),
    );
    expect(secrets).not.toContain('visible-value');
    expect(secrets).not.toContain('ab');
    expect(new Set(secrets).size).toBe(secrets.length);
  });

  it('finds passwords in URLs but not user names or hosts', () => {
    expect(urlPasswords('clone http://user:pw123@host/x and ssh://git@host/y')).toEqual(['pw123']);
  });
});
