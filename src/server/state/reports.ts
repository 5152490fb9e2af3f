/**
 * `artifacts:reports` other than dotenv (`dotenv-report.ts`): the payload asks the runner to upload
 * each report type on its own (API v4, gzip members as GitLab asks), the upload is kept under the
 * build's artifacts, recorded on the build (type, name, size) and listed by the admin API, `exec` and
 * the web page. A JUnit report is read into passed, failed and skipped counts (`junit.ts`); GitLab's
 * other reports feed merge-request and security pages this server does not have, so they are kept
 * and listed for the user to open.
 */
import { REPORT_KEYWORDS } from '../../pipeline/keywords.js';
import type { ServerContext } from '../context.js';
import { readJunit, type TestSummary } from './junit.js';
import type { BuildRecord } from './store.js';

/** The artifact types a job's reports upload as: `coverage_report` goes by its format, dotenv has its own path. */
export const REPORT_TYPES: readonly string[] = [
  ...Object.keys(REPORT_KEYWORDS).filter((type) => type !== 'coverage_report' && type !== 'dotenv'),
  'cobertura',
  'jacoco',
];

/** GitLab's file names of reports (`Ci::JobArtifact::DEFAULT_FILE_NAMES`); others are `<type>.json`. */
const FILE_NAMES: Readonly<Record<string, string>> = {
  junit: 'junit.xml',
  cobertura: 'cobertura-coverage.xml',
  jacoco: 'jacoco.xml',
  codequality: 'gl-code-quality-report.json',
  sast: 'gl-sast-report.json',
  secret_detection: 'gl-secret-detection-report.json',
  dependency_scanning: 'gl-dependency-scanning-report.json',
  container_scanning: 'gl-container-scanning-report.json',
  dast: 'gl-dast-report.json',
  metrics: 'metrics.txt',
  terraform: 'tfplan.json',
  cyclonedx: 'gl-sbom.cdx.json',
  lsif: 'lsif.json',
};

export function reportFileName(type: string): string {
  return FILE_NAMES[type] ?? `${type}.json`;
}

/**
 * Keeps an uploaded report of `type` for `build` (the temp file is moved into place) and, for JUnit,
 * reads its test counts. A JUnit report that cannot be read is kept and listed; the problem is logged.
 */
export async function storeReport(ctx: ServerContext, build: BuildRecord, type: string, upload: { tempPath: string; size: number }, format: string): Promise<void> {
  const path = await ctx.artifacts.commitReport(upload.tempPath, build.id, type);
  let tests: TestSummary | undefined;
  if (type === 'junit') {
    tests = await readJunit(path, format === 'gzip', ctx.closing).catch((error: unknown) => {
      ctx.logger.warn({ buildId: build.id, err: error }, 'the JUnit report could not be read; it is kept as uploaded');
      return undefined;
    });
  }
  ctx.store.changeBuild(build, (b) => {
    b.reports = [...(b.reports ?? []).filter((report) => report.type !== type), { type, filename: reportFileName(type), size: upload.size, format }];
    if (tests) b.tests = tests;
  });
}

