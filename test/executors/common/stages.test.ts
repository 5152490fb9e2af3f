import { describe, expect, it } from 'vitest';
import { STAGES, stageDescription, stageOfStep, stepStage } from '../../../src/executors/common/stages.js';

describe('the stage table', () => {
  it('has GitLab Runner 19.3\'s stages, in the order a job runs them, the steps where they run', () => {
    // GitLab Runner v19.3.0 common/build.go: the BuildStage constants, in Run's order.
    expect(STAGES.map((stage) => stage.name)).toEqual([
      'resolve_secrets', 'prepare_executor', 'prepare_script', 'get_sources', 'clear_worktree', 'restore_cache', 'download_artifacts',
      'step_*', 'after_script', 'archive_cache', 'archive_cache_on_failure', 'upload_artifacts_on_success', 'upload_artifacts_on_failure',
      'cleanup_file_variables',
    ]);
  });

  it('opens each section with GitLab Runner\'s description of the stage', () => {
    // GitLab Runner v19.3.0 common/build.go: GetStageDescription, and the prepare_executor and resolve_secrets sections.
    expect(stageDescription('prepare_executor', 'docker')).toBe('Preparing the "docker" executor');
    expect(stageDescription('prepare_script')).toBe('Preparing environment');
    expect(stageDescription('get_sources')).toBe('Getting source from Git repository');
    expect(stageDescription('clear_worktree')).toBe('Deleting all tracked and untracked files due to source fetch failure');
    expect(stageDescription('restore_cache')).toBe('Restoring cache');
    expect(stageDescription('download_artifacts')).toBe('Downloading artifacts');
    expect(stageDescription('step_script')).toBe('Executing "step_script" stage of the job script');
    expect(stageDescription('after_script')).toBe('Running after_script');
    expect(stageDescription('archive_cache')).toBe('Saving cache for successful job');
    expect(stageDescription('archive_cache_on_failure')).toBe('Saving cache for failed job');
    expect(stageDescription('upload_artifacts_on_success')).toBe('Uploading artifacts for successful job');
    expect(stageDescription('upload_artifacts_on_failure')).toBe('Uploading artifacts for failed job');
    expect(stageDescription('cleanup_file_variables')).toBe('Cleaning up project directory and file based variables');
  });

  it('names a step\'s stage as GitLab Runner\'s StepToBuildStage does, after_script its own', () => {
    expect(stepStage('Release')).toBe('step_release');
    expect(stageOfStep('script')).toBe('step_script');
    expect(stageOfStep('after_script')).toBe('after_script');
  });

  it('says for every stage it does not run why not', () => {
    for (const stage of STAGES) {
      if (stage.site === 'none') expect(stage.support.status, stage.name).toBe('warned');
      else expect(stage.support.status, stage.name).toBe('honoured');
    }
  });
});
