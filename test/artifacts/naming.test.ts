import { describe, expect, it } from 'vitest';
import { artifactsFileName, dependenciesToDownload, expandVariables, shouldUpload } from '../../src/artifacts/index.js';
import type { DependencyBuild } from '../../src/protocol/types.js';
import { fakeBuild } from './fixtures.js';

describe('artifacts names and rules', () => {
  it('expands $VAR and ${VAR} from the build variables, later ones winning', () => {
    const variables = [
      { key: 'REF', value: 'old', public: true },
      { key: 'REF', value: 'main', public: true },
      { key: 'ID', value: '42', public: true },
    ];
    expect(expandVariables('cov-$REF-${ID}-$MISSING.', variables)).toBe('cov-main-42-.');
  });

  it('names the upload after the basename of artifacts:name, defaulting to "artifacts"', () => {
    const named = fakeBuild({ options: { artifacts: { name: 'out/$CI_BUILD_REF_NAME', paths: ['x'] } }, variables: [{ key: 'CI_BUILD_REF_NAME', value: 'main', public: true }] });
    expect(artifactsFileName(named, 'tar.gz')).toBe('main.tar.gz');
    expect(artifactsFileName(fakeBuild(), 'zip')).toBe('artifacts.zip');
    expect(artifactsFileName(fakeBuild({ options: { artifacts: { name: '../..' } } }), 'zip')).toBe('artifacts.zip');
  });

  it('uploads per artifacts:when (§9.3)', () => {
    expect([true, false].map((ok) => shouldUpload(undefined, ok))).toEqual([true, false]);
    expect([true, false].map((ok) => shouldUpload('on_success', ok))).toEqual([true, false]);
    expect([true, false].map((ok) => shouldUpload('on_failure', ok))).toEqual([false, true]);
    expect([true, false].map((ok) => shouldUpload('always', ok))).toEqual([true, true]);
  });

  it('downloads only dependencies with an artifacts file that pass options.dependencies', () => {
    const dep = (id: number, name: string, withFile: boolean): DependencyBuild => ({
      ...fakeBuild({ id, name }),
      ...(withFile ? { artifacts_file: { filename: 'a.tar.gz', size: 1 } } : {}),
    });
    const deps = [dep(1, 'build', true), dep(2, 'lint', false), dep(3, 'docs', true)];
    expect(dependenciesToDownload(deps, undefined).map((d) => d.id)).toEqual([1, 3]);
    expect(dependenciesToDownload(deps, ['docs', 'lint']).map((d) => d.id)).toEqual([3]);
    expect(dependenciesToDownload(deps, [])).toEqual([]);
  });
});
