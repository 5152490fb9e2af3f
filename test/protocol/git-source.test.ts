/**
 * The checks on what a coordinator says about a job's sources (protocol/git-source.ts): ref names
 * held against real `git check-ref-format`, refspecs, SHAs and repository URLs.
 */
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { isValidRefName, refProblem, refspecProblem, repoUrlProblem, shaProblem } from '../../src/protocol/git-source.js';

const NAMES = [
  'refs/heads/main', 'refs/heads/feature/x_1', 'refs/tags/v1.2.3', 'refs/pipelines/42', 'refs/merge-requests/1/head',
  'refs/heads/-dash', 'refs/heads/a..b', 'refs/heads/.hidden', 'refs/heads/a.lock', 'refs/heads/a/', 'refs/heads//a',
  'refs/heads/a.', 'refs/heads/a@{1}', 'refs/heads/a b', 'refs/heads/a~1', 'refs/heads/a^', 'refs/heads/a:b',
  'refs/heads/a?', 'refs/heads/a[', 'refs/heads/a\\b', 'refs/heads/a\tb', 'refs/heads/*', '@', 'refs/heads/ü',
  'refs/heads/a@b', '/refs/heads/a', 'refs/heads/a.lock/b', 'refs/heads/x.lockx',
];

describe('git source checks', () => {
  it('agrees with git check-ref-format on every name', async () => {
    for (const name of NAMES) {
      const git = await execa('git', ['check-ref-format', name], { reject: false });
      expect(isValidRefName(name), name).toBe(git.exitCode === 0);
    }
  });

  it('allows one * on each side of a pattern refspec, as git check-ref-format --refspec-pattern does', async () => {
    for (const name of ['refs/heads/*', 'refs/heads/*/x', 'refs/*/*']) {
      const git = await execa('git', ['check-ref-format', '--refspec-pattern', name], { reject: false });
      expect(isValidRefName(name, true), name).toBe(git.exitCode === 0);
    }
  });

  it('accepts the refspecs GitLab sends and refuses options, bare names and unbalanced patterns', () => {
    for (const ok of ['+refs/pipelines/9:refs/pipelines/9', '+refs/heads/main:refs/remotes/origin/main', 'refs/tags/v1:refs/tags/v1', '+refs/heads/*:refs/remotes/origin/*']) {
      expect(refspecProblem(ok), ok).toBeUndefined();
    }
    for (const bad of ['--upload-pack=touch x', '-c', 'main', '+refs/heads/main', 'refs/heads/*:refs/remotes/origin/main', 'HEAD:refs/x', ':refs/heads/main', '+refs/heads/a:--upload-pack=x']) {
      expect(refspecProblem(bad), bad).toBeDefined();
    }
  });

  it('accepts http(s) repository URLs only', () => {
    expect(repoUrlProblem('https://gitlab-ci-token:t@gitlab.example.com/g/p.git')).toBeUndefined();
    expect(repoUrlProblem('http://127.0.0.1:8080/g/p.git')).toBeUndefined();
    for (const bad of ['.', '/srv/repo', 'file:///srv/repo', 'ext::sh -c touch% x', 'ssh://git@h/g/p.git', 'git@h:g/p.git', '--upload-pack=x', 'https://h/p\n']) {
      expect(repoUrlProblem(bad), bad).toBeDefined();
    }
  });

  it('accepts hex SHAs and branch or tag names, never a leading -', () => {
    expect(shaProblem('0123456789abcdef0123456789abcdef01234567')).toBeUndefined();
    expect(shaProblem('--orphan=x')).toBeDefined();
    expect(shaProblem('0123456g')).toBeDefined();
    expect(refProblem('feature/x')).toBeUndefined();
    expect(refProblem('refs/merge-requests/1/head')).toBeUndefined();
    expect(refProblem('')).toBeUndefined();
    expect(refProblem('-x')).toBeDefined();
    expect(refProblem('a..b')).toBeDefined();
  });
});
