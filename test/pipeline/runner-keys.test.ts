/**
 * The `.gitlab-ci.yml` keys GitLab passes to the runner as they are: `hooks:` (also under `default:`),
 * the image's and services' `docker:`/`kubernetes:` options and a service's own `variables:`.
 */
import { describe, expect, it } from 'vitest';
import { parsePipeline } from '../../src/pipeline/parse.js';

const job = (yaml: string, name = 'j') => parsePipeline(yaml).jobs.find((spec) => spec.name === name)!;

describe('runner keys of a job', () => {
  it('reads hooks:pre_get_sources_script, from default: too, the job\'s own winning', () => {
    const yaml = 'default:\n  hooks:\n    pre_get_sources_script: [echo from default]\nj:\n  script: [echo]\nown:\n  hooks:\n    pre_get_sources_script:\n      - echo one\n      - echo two\n  script: [echo]\n';
    expect(job(yaml).hooks).toEqual({ preGetSourcesScript: ['echo from default'] });
    expect(job(yaml, 'own').hooks).toEqual({ preGetSourcesScript: ['echo one', 'echo two'] });
  });

  it('refuses a hook GitLab does not know', () => {
    expect(() => parsePipeline('j:\n  hooks:\n    post_get_sources_script: [x]\n  script: [echo]\n')).toThrow(/post_get_sources_script/);
  });

  it('reads image docker: { user, platform } and kubernetes: { user }, a number user as text', () => {
    const spec = job('j:\n  image:\n    name: alpine\n    docker:\n      user: 1000\n      platform: linux/arm64\n    kubernetes:\n      user: "1000:1000"\n  script: [echo]\n');
    expect(spec.image).toBe('alpine');
    expect(spec.imageExecutorOpts).toEqual({ docker: { user: '1000', platform: 'linux/arm64' }, kubernetes: { user: '1000:1000' } });
    expect(() => parsePipeline('j:\n  image:\n    name: alpine\n    docker:\n      shm: 1g\n  script: [echo]\n')).toThrow(/shm/);
  });

  it('reads a service\'s variables, executor options and several aliases', () => {
    const spec = job('j:\n  services:\n    - name: postgres:16\n      alias: db,pg\n      variables:\n        POSTGRES_PASSWORD: secret\n        PORT: 5432\n      docker:\n        user: postgres\n  script: [echo]\n');
    expect(spec.serviceSpecs).toEqual([{ name: 'postgres:16', alias: 'db,pg', variables: [{ key: 'POSTGRES_PASSWORD', value: 'secret' }, { key: 'PORT', value: '5432' }], executorOpts: { docker: { user: 'postgres' } } }]);
  });
});
