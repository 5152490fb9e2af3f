/**
 * The control variables as GitLab Runner 19 reads them (control-variables.ts over control-table.ts):
 * defaults, values it cannot use (a warning and the default), clamped attempts, warned variables (one
 * line each), and git options a job may not hand to the runner's git (the job fails, naming both).
 */
import { describe, expect, it } from 'vitest';
import { CONTROL_VARIABLES, controlVariable } from '../../src/agent/job/control-table.js';
import { JobSetupError, readControls } from '../../src/agent/job/control-variables.js';

const withVars = (pairs: Record<string, string>) => Object.entries(pairs).map(([key, value]) => ({ key, value, public: true }));
const read = (pairs: Record<string, string>, allowGitFetch = true) => readControls(withVars(pairs), { allowGitFetch, setByJob: new Set(Object.keys(pairs)) });

describe('control variables', () => {
  it('defaults to fetch when the server allows it, else clone; knows empty', () => {
    expect(read({}).gitStrategy).toBe('fetch');
    expect(read({}, false).gitStrategy).toBe('clone');
    expect(read({ GIT_STRATEGY: 'none' }).gitStrategy).toBe('none');
    expect(read({ GIT_STRATEGY: 'empty' })).toMatchObject({ gitStrategy: 'empty', gitCheckout: false, submodules: 'none' });
  });

  it('reads depth, submodules, attempts, debug trace and the git defaults GitLab Runner uses', () => {
    const c = read({ GIT_DEPTH: '3', GIT_SUBMODULE_STRATEGY: 'recursive', GET_SOURCES_ATTEMPTS: '4', CI_DEBUG_TRACE: 'true' });
    expect(c).toMatchObject({ gitDepth: 3, submodules: 'recursive', submoduleDepth: 3, getSourcesAttempts: 4, debugTrace: true, gitCheckout: true });
    expect(c).toMatchObject({ cleanFlags: ['-ffdx'], fetchFlags: ['--prune', '--quiet'], cloneFlags: [], submoduleUpdateFlags: [], lfsSkipSmudge: false, submoduleForceHttps: false });
    expect(c.warnings).toEqual([]);
  });

  it('falls back to the default with a warning for values it cannot use, and clamps attempts', () => {
    const c = read({ GIT_STRATEGY: 'copy', GIT_SUBMODULE_STRATEGY: 'deep', GIT_CHECKOUT: 'maybe', GET_SOURCES_ATTEMPTS: '11', RESTORE_CACHE_ATTEMPTS: '0', ARTIFACT_DOWNLOAD_ATTEMPTS: 'junk' });
    expect(c).toMatchObject({ gitStrategy: 'fetch', submodules: 'none', gitCheckout: true, getSourcesAttempts: 10, restoreCacheAttempts: 1, artifactDownloadAttempts: 1 });
    expect(c.warnings).toEqual([
      `GIT_STRATEGY: expected either 'clone', 'fetch', 'none' or 'empty' got "copy", using default value 'fetch'`,
      `GIT_SUBMODULE_STRATEGY: expected either 'normal', 'recursive' or 'none' got "deep"`,
      'GIT_CHECKOUT: expected bool got "maybe", using default value: true',
      'GET_SOURCES_ATTEMPTS: number of attempts out of the range [1, 10], clamping to: 10',
      'ARTIFACT_DOWNLOAD_ATTEMPTS: expected int got "junk", using default value: 1',
      'RESTORE_CACHE_ATTEMPTS: number of attempts out of the range [1, 10], clamping to: 1',
    ]);
  });

  it('takes the job\'s git options, `none` for none, and reads the submodule variables', () => {
    const c = read({
      GIT_CLEAN_FLAGS: 'none', GIT_FETCH_EXTRA_FLAGS: '--no-tags --depth 5 -j4', GIT_CLONE_EXTRA_FLAGS: '--filter=blob:none',
      GIT_SUBMODULE_PATHS: 'a :(exclude)b', GIT_SUBMODULE_DEPTH: '2', GIT_SUBMODULE_UPDATE_FLAGS: '--remote --jobs 4', GIT_SUBMODULE_FORCE_HTTPS: 'true', GIT_LFS_SKIP_SMUDGE: '1',
    });
    expect(c).toMatchObject({
      cleanFlags: [], fetchFlags: ['--no-tags', '--depth', '5', '-j4'], cloneFlags: ['--filter=blob:none'], submodulePaths: ['a', ':(exclude)b'], submoduleDepth: 2,
      submoduleUpdateFlags: ['--remote', '--jobs', '4'], submoduleForceHttps: true, lfsSkipSmudge: true,
    });
  });

  it('refuses git options that would run a program or reach outside the checkout, naming the variable and the option', () => {
    const refused: Array<[string, string, string]> = [
      ['GIT_FETCH_EXTRA_FLAGS', '--prune --upload-pack=touch /tmp/x', '--upload-pack=touch'],
      ['GIT_FETCH_EXTRA_FLAGS', '--recurse-submodules', '--recurse-submodules'],
      ['GIT_FETCH_EXTRA_FLAGS', '-c core.sshCommand=x', '-c'],
      ['GIT_FETCH_EXTRA_FLAGS', '--negotiation-tip -x', '--negotiation-tip -x'],
      ['GIT_CLONE_EXTRA_FLAGS', '--template=/tmp/t', '--template=/tmp/t'],
      ['GIT_CLONE_EXTRA_FLAGS', '--reference /srv/other', '--reference'],
      ['GIT_CLONE_EXTRA_FLAGS', '--separate-git-dir=/tmp/g', '--separate-git-dir=/tmp/g'],
      ['GIT_CLONE_EXTRA_FLAGS', '-u cmd', '-u'],
      ['GIT_CLONE_EXTRA_FLAGS', '--config=core.hooksPath=/tmp', '--config=core.hooksPath=/tmp'],
      ['GIT_CLEAN_FLAGS', '-ffdx /etc', '/etc'],
      ['GIT_CLEAN_FLAGS', '-i', '-i'],
      ['GIT_SUBMODULE_UPDATE_FLAGS', '--recursive', '--recursive'],
      ['GIT_SUBMODULE_UPDATE_FLAGS', '--reference=/srv/x', '--reference=/srv/x'],
    ];
    for (const [name, value, option] of refused) {
      let error: unknown;
      try {
        read({ [name]: value });
      } catch (caught) {
        error = caught;
      }
      expect(error, `${name}=${value}`).toBeInstanceOf(JobSetupError);
      expect((error as Error).message, `${name}=${value}`).toContain(`${name}: the runner's git does not take "${option}`);
    }
  });

  it('refuses GIT_SUBMODULE_PATHS with a bare :(exclude), as GitLab Runner does', () => {
    expect(() => read({ GIT_SUBMODULE_PATHS: ':(exclude) lib' })).toThrow(/GIT_SUBMODULE_PATHS: invalid submodule pathspec/);
  });

  it('warns once for each warned variable the job sets, with the reason, and never for ones it does not set', () => {
    const c = read({ TRANSFER_METER_FREQUENCY: '5s', KUBERNETES_POD_LABELS_TEAM: 'a', GIT_STRATEGY: 'clone' });
    expect(c.warnings).toEqual([
      `TRANSFER_METER_FREQUENCY is not honoured by this runner: ${(controlVariable('TRANSFER_METER_FREQUENCY')?.support as { reason: string }).reason}`,
      `KUBERNETES_POD_LABELS_TEAM is not honoured by this runner: ${(controlVariable('KUBERNETES_POD_LABELS_')?.support as { reason: string }).reason}`,
    ]);
    expect(readControls(withVars({ TRANSFER_METER_FREQUENCY: '5s' }), { allowGitFetch: true }).warnings).toEqual([]);
  });

  it('lists every variable once, each with a default and what it accepts', () => {
    const names = CONTROL_VARIABLES.map((entry) => entry.name);
    expect(new Set(names).size).toBe(names.length);
    for (const entry of CONTROL_VARIABLES) {
      expect(entry.default, entry.name).not.toBe('');
      expect(entry.accepts, entry.name).not.toBe('');
      expect(entry.name.startsWith('FF_'), entry.name).toBe(false);
    }
  });
});
