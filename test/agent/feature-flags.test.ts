import { describe, expect, it } from 'vitest';
import { configFlagWarnings, FEATURE_FLAGS, featureFlagVariables, parseGoBool, resolveFeatureFlags } from '../../src/agent/config/feature-flags.js';

describe('the feature flag table', () => {
  it('has every flag of GitLab Runner 19.3 with its default, in its order', () => {
    // GitLab Runner v19.3.0 helpers/featureflags/flags.go: the names whose default is true; the rest default to false.
    const onByDefault = ['FF_USE_DIRECT_DOWNLOAD', 'FF_USE_POD_ACTIVE_DEADLINE_SECONDS', 'FF_SECRET_RESOLVING_FAILS_IF_MISSING', 'FF_USE_GIT_BUNDLE_URIS', 'FF_USE_DOCKER_AUTOSCALER_DIAL_STDIO', 'FF_TIMESTAMPS', 'FF_MASK_ALL_DEFAULT_TOKENS', 'FF_USE_EXPONENTIAL_BACKOFF_STAGE_RETRY', 'FF_USE_ADAPTIVE_REQUEST_CONCURRENCY', 'FF_USE_GITALY_CORRELATION_ID', 'FF_ENABLE_JOB_INPUTS_INTERPOLATION'];
    expect(FEATURE_FLAGS).toHaveLength(52);
    expect(FEATURE_FLAGS[0]?.name).toBe('FF_TEST_FEATURE');
    expect(FEATURE_FLAGS.at(-1)?.name).toBe('FF_USE_NATIVE_CONTAINER_STOP');
    expect(FEATURE_FLAGS.filter((flag) => flag.default).map((flag) => flag.name)).toEqual(onByDefault);
    expect(new Set(FEATURE_FLAGS.map((flag) => flag.name)).size).toBe(FEATURE_FLAGS.length);
    for (const flag of FEATURE_FLAGS) if (flag.support.status !== 'honoured') expect(flag.support.reason, flag.name).not.toBe('');
  });

  it('resolves as GitLab Runner does: [runners.feature_flags] over the job\'s variables over the default', () => {
    const flags = resolveFeatureFlags({ FF_TIMESTAMPS: false }, [
      { key: 'FF_TIMESTAMPS', value: 'true' },
      { key: 'FF_SCRIPT_SECTIONS', value: '$TURN_ON' },
      { key: 'TURN_ON', value: 'T' },
    ]);
    expect(flags.on('FF_TIMESTAMPS')).toBe(false);
    expect(flags.on('FF_SCRIPT_SECTIONS')).toBe(true);
    expect(flags.on('FF_USE_DIRECT_DOWNLOAD')).toBe(true);
    expect(flags.header).toBe('FF_SCRIPT_SECTIONS:true, FF_TIMESTAMPS:false');
    expect(flags.warnings).toEqual([]);
    expect(featureFlagVariables(flags).find((v) => v.key === 'FF_TIMESTAMPS')).toEqual({ key: 'FF_TIMESTAMPS', value: 'false', public: true });
  });

  it('reads values as Go\'s ParseBool, and warns as GitLab Runner does about one it cannot', () => {
    expect(['1', 't', 'TRUE', 'True'].map(parseGoBool)).toEqual([true, true, true, true]);
    expect(['0', 'f', 'FALSE', 'False'].map(parseGoBool)).toEqual([false, false, false, false]);
    expect(['yes', 'on', ''].map(parseGoBool)).toEqual([undefined, undefined, undefined]);
    const flags = resolveFeatureFlags({}, [{ key: 'FF_TIMESTAMPS', value: 'yes' }]);
    expect(flags.on('FF_TIMESTAMPS')).toBe(true);
    expect(flags.warnings).toEqual(['FF_TIMESTAMPS: could not parse feature flag, expected bool, got yes']);
  });

  it('warns about a flag that asks for what ci-runner does not do, and not about one that asks for what it does', () => {
    expect(resolveFeatureFlags({}, [{ key: 'FF_USE_FASTZIP', value: 'true' }]).warnings[0]).toMatch(/^FF_USE_FASTZIP=true is not honoured: /);
    expect(resolveFeatureFlags({}, [{ key: 'FF_MASK_ALL_DEFAULT_TOKENS', value: 'false' }]).warnings).toEqual([]);
    expect(configFlagWarnings({ FF_NO_SUCH: true, FF_USE_FASTZIP: true, FF_TIMESTAMPS: false })).toEqual([
      '`FF_NO_SUCH` is not a feature flag of GitLab Runner 19.3; it is ignored',
      expect.stringMatching(/^`FF_USE_FASTZIP = true` is not honoured: /),
    ]);
  });
});

describe('[runners.feature_flags] in config.toml', () => {
  it('is read, a flag ci-runner does not honour or know warned about with its line', async () => {
    const { parseConfig } = await import('../../src/agent/config/index.js');
    const text = '[[runners]]\n  name = "r"\n  url = "http://ci.example.com/"\n  token = "t1"\n  executor = "shell"\n  [runners.feature_flags]\n    FF_TIMESTAMPS = false\n    FF_USE_FASTZIP = true\n    FF_NOPE = true\n';
    const { config, warnings } = parseConfig(text, 'c.toml');
    expect(config.runners[0]?.feature_flags).toEqual({ FF_TIMESTAMPS: false, FF_USE_FASTZIP: true, FF_NOPE: true });
    expect(warnings).toEqual([
      expect.stringMatching(/^c\.toml:6: \[runners\.feature_flags\] `FF_USE_FASTZIP = true` is not honoured: /),
      'c.toml:6: [runners.feature_flags] `FF_NOPE` is not a feature flag of GitLab Runner 19.3; it is ignored',
    ]);
    expect(() => parseConfig(text.replace('FF_TIMESTAMPS = false', 'FF_TIMESTAMPS = "no"'), 'c.toml')).toThrow(/feature_flags/);
  });
});
