import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BuildPayload } from '../../src/protocol/types.js';
import { collectSecrets, urlPasswords, withSecretLines } from '../../src/trace/secrets.js';

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

  it('masks each line of a multi-line secret as well as the whole, without its line endings', () => {
    const key = '-----BEGIN KEY-----\r\nMIIEpAIBAAKCAQEA\r\n  indented-line  \r\nab\r\n\r\n-----END KEY-----\r\n';
    const secrets = collectSecrets(build({ variables: [{ key: 'DEPLOY_KEY', value: key, public: false }] }), 'runner-token-xyz');
    const whole = key.replace(/\r\n$/, '');
    expect(secrets).toEqual(expect.arrayContaining([whole, '-----BEGIN KEY-----', 'MIIEpAIBAAKCAQEA', 'indented-line', '-----END KEY-----']));
    // Lines shorter than the minimum (`ab`, the empty line) are not masked on their own.
    expect(secrets).not.toContain('ab');
    expect(secrets).not.toContain('');
    expect(secrets.filter((secret) => /\r|\n/.test(secret))).toEqual([whole]);
  });

  it('finds the passwords the regular expression it replaces found (property)', () => {
    const reference = (text: string): string[] => [...text.matchAll(/[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:([^\s/@]+)@/gi)].flatMap((m) => {
      const password = m[1] as string;
      try {
        const decoded = decodeURIComponent(password);
        return decoded === password ? [password] : [password, decoded];
      } catch {
        return [password];
      }
    });
    const piece = fc.constantFrom('a', 'Z', '1', '+', '.', '-', ':', '/', '//', '://', '@', ' ', '\n', '%40', '%', 'x:y@', 'http://u:p@h');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 25 }).map((pieces) => pieces.join('')), (text) => {
        expect(urlPasswords(text)).toEqual(reference(text));
      }),
      { numRuns: 20_000 },
    );
  });

  it('stops at the limit it is given', () => {
    expect(urlPasswords('a://u:one@h b://u:two@h c://u:three@h', 2)).toEqual(['one', 'two']);
  });

  it('masks the passwords of the first 100 URLs of a job\'s variables, and says so when there are more', () => {
    const many = Array.from({ length: 150 }, (_, i) => `https://u:password-${i}@h/`).join(' ');
    const notes: string[] = [];
    const secrets = collectSecrets(build({ variables: [{ key: 'MANY', value: many, public: true }, { key: 'HIDDEN', value: 'masked-after-them', public: false }] }), 'runner-token-xyz', [], notes);
    // The repository URL's password is one of them.
    expect(secrets).toContain('password-0');
    expect(secrets).toContain('password-98');
    expect(secrets).not.toContain('password-99');
    expect(secrets).not.toContain('password-149');
    expect(secrets).toContain('masked-after-them');
    expect(notes).toEqual([expect.stringContaining('more than 100 passwords in URLs')]);
  });

  it('masks at most 1000 lines of multi-line secrets one by one, and says so', () => {
    const value = Array.from({ length: 1500 }, (_, i) => `line-${i}`).join('\n');
    const notes: string[] = [];
    const secrets = collectSecrets(build({ variables: [{ key: 'BUNDLE', value, public: false }] }), 'runner-token-xyz', [], notes);
    expect(secrets).toContain(value);
    expect(secrets).toContain('line-999');
    expect(secrets).not.toContain('line-1000');
    expect(notes).toEqual([expect.stringContaining('more than 1000 lines')]);
  });

  it('splits on LF, CRLF and lone CR alike', () => {
    expect(withSecretLines(['one-line', 'aaa\nbbb\r\nccc\rddd'])).toEqual(['one-line', 'aaa\nbbb\r\nccc\rddd', 'aaa', 'bbb', 'ccc', 'ddd']);
  });
});
