/** What the server reads from a finished job: failure reasons from the last failure line, dotenv reports. */
import { describe, expect, it } from 'vitest';
import { exitCodeOf, failureReasonOf } from '../../src/server/state/job-outcome.js';
import { parseDotenv } from '../../src/server/state/dotenv-report.js';

describe('failureReasonOf', () => {
  it.each([
    ['ERROR: Job failed: exit status 3', 'script_failure'],
    ['ERROR: Build failed: exit code 1', 'script_failure'],
    ['ERROR: Job failed: killed by SIGKILL', 'script_failure'],
    ['ERROR: Job failed: execution took longer than 60 seconds', 'job_execution_timeout'],
    ['ERROR: Job failed (system failure): the runner recovered the job at …', 'runner_system_failure'],
    ['ERROR: Build failed (system failure): Error response from daemon', 'runner_system_failure'],
    ['ERROR: Job failed: runner error: EACCES', 'runner_system_failure'],
    ['ERROR: Job failed: uploading artifacts failed: HTTP 500', 'api_failure'],
    ['ERROR: Job failed: canceled', 'unknown_failure'],
    [undefined, 'unknown_failure'],
  ])('%s → %s', (line, reason) => {
    expect(failureReasonOf(line)).toBe(reason);
  });
});

describe('exitCodeOf', () => {
  it('reads the script\'s exit status from ours and GitLab Runner\'s failure lines, and nothing else', () => {
    expect(exitCodeOf('ERROR: Job failed: exit status 137')).toBe(137);
    expect(exitCodeOf('ERROR: Job failed: exit code 2')).toBe(2);
    expect(exitCodeOf('ERROR: Job failed: killed by SIGKILL')).toBeUndefined();
    expect(exitCodeOf(undefined)).toBeUndefined();
  });
});

describe('parseDotenv', () => {
  it('reads KEY=VALUE lines, skipping blanks and comments and removing one pair of quotes', () => {
    expect(parseDotenv('A=1\n\n# note\nB="two words"\nC=x=y\nD=\n')).toEqual([
      { key: 'A', value: '1' },
      { key: 'B', value: 'two words' },
      { key: 'C', value: 'x=y' },
      { key: 'D', value: '' },
    ]);
  });

  it('refuses a line that is not KEY=VALUE, naming it', () => {
    expect(() => parseDotenv('A=1\nexport B=2\n')).toThrow('line 2 is not KEY=VALUE');
  });
});
