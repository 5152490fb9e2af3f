import { describe, expect, it } from 'vitest';
import { environmentSlug, environmentVariables, guessTier } from '../../src/pipeline/environment.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

describe('environment:', () => {
  it('reads the short and the long form', () => {
    const spec = parsePipeline(`
short: { script: x, environment: production }
long:
  script: x
  environment: { name: review/$CI_COMMIT_REF_SLUG, url: https://$CI_COMMIT_REF_SLUG.example.com, action: stop, deployment_tier: staging, on_stop: x, auto_stop_in: 1 day }
`);
    expect(spec.jobs.map((job) => job.environment)).toEqual([
      { name: 'production', action: 'start' },
      { name: 'review/$CI_COMMIT_REF_SLUG', url: 'https://$CI_COMMIT_REF_SLUG.example.com', action: 'stop', tier: 'staging' },
    ]);
  });

  it('refuses an environment without a name and an unknown action, naming the job', () => {
    expect(() => parsePipeline('j: { script: x, environment: { url: http://x } }\n')).toThrow('jobs:j environment:name is missing');
    expect(() => parsePipeline('j: { script: x, environment: { name: a, action: deploy } }\n')).toThrow('jobs:j environment:action must be one of start, prepare, stop, verify, access');
  });

  it('makes GitLab\'s slugs: short names as they are, changed or long ones with a hash suffix', () => {
    expect(environmentSlug('production')).toBe('production');
    expect(environmentSlug('Stage Domain')).toBe('stage-domain-ip33nk');
    expect(environmentSlug('stage-domain-foobar-long-string')).toBe('stage-domain-foob-yafktx');
    expect(environmentSlug('1st')).toMatch(/^env-1st-[0-9a-z]{6}$/);
  });

  it('guesses the tier from the name when deployment_tier is not given', () => {
    expect(['review/app', 'qa', 'staging', 'prod', 'sandbox'].map(guessTier)).toEqual(['development', 'testing', 'staging', 'production', 'other']);
  });

  it('gives the job CI_ENVIRONMENT_* with the name and url expanded by its variables', () => {
    const variables = Object.fromEntries(environmentVariables({ name: 'review/$BRANCH', url: 'https://${BRANCH}.example.com', action: 'start' }, { BRANCH: 'fix-1' }));
    expect(variables).toEqual({
      CI_ENVIRONMENT_NAME: 'review/fix-1',
      CI_ENVIRONMENT_SLUG: environmentSlug('review/fix-1'),
      CI_ENVIRONMENT_ACTION: 'start',
      CI_ENVIRONMENT_TIER: 'development',
      CI_ENVIRONMENT_URL: 'https://fix-1.example.com',
    });
  });
});
