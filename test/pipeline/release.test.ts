import { describe, expect, it } from 'vitest';
import { parsePipeline, PipelineConfigError } from '../../src/pipeline/parse.js';

function refusal(text: string): string {
  try {
    parsePipeline(text);
  } catch (error) {
    expect(error).toBeInstanceOf(PipelineConfigError);
    return (error as Error).message;
  }
  throw new Error(`expected the pipeline to be refused:\n${text}`);
}

const only = (text: string) => parsePipeline(text).jobs[0];

describe('release: (GitLab\'s Entry::Release)', () => {
  it('reads the release a job makes, as written ($VARIABLES are the runner\'s to expand)', () => {
    const job = only(
      'r:\n  script: [echo]\n  release:\n    tag_name: v$CI_PIPELINE_IID\n    name: Release\n    description: ./notes.md\n    ref: main\n    released_at: "2025-01-31T12:00:00Z"\n    milestones: m1\n    assets:\n      links:\n        - name: bin\n          url: https://example.com/bin\n          link_type: package\n',
    );
    expect(job?.release).toEqual({
      tag_name: 'v$CI_PIPELINE_IID',
      name: 'Release',
      description: './notes.md',
      ref: 'main',
      released_at: '2025-01-31T12:00:00Z',
      milestones: ['m1'],
      assets: { links: [{ name: 'bin', url: 'https://example.com/bin', link_type: 'package' }] },
    });
  });

  it('refuses what GitLab refuses, naming the key', () => {
    expect(refusal('r:\n  script: [echo]\n  release:\n    description: d\n')).toContain('jobs:r release:tag_name is missing');
    expect(refusal('r:\n  script: [echo]\n  release:\n    tag_name: v1\n')).toContain('jobs:r release:description is missing');
    expect(refusal('r:\n  script: [echo]\n  release:\n    tag_name: v1\n    description: d\n    released_at: tomorrow\n')).toContain('release:released_at must be a valid datetime');
    expect(refusal('r:\n  script: [echo]\n  release:\n    tag_name: v1\n    description: d\n    colour: red\n')).toContain('jobs:r:release config contains unknown keys: colour');
    expect(refusal('r:\n  script: [echo]\n  release:\n    tag_name: v1\n    description: d\n    assets:\n      links:\n        - name: x\n          url: not a url\n')).toContain('release:assets:links:url must be a valid URL');
  });
});
