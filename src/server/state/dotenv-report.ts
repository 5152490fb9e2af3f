/**
 * `artifacts:reports:dotenv` over API v1. The runner protocol has no report upload, so the report
 * travels inside the artifacts archive: the server adds the dotenv files to `artifacts:paths` in the
 * payload (api/payload.ts), any runner archives and uploads them with E7, and here the server reads them
 * back out of the stored archive (tar.gz, tar or zip, by magic bytes) before answering E7 — that is,
 * before the job's final update, so the variables exist before any later job is queued. They go to
 * the jobs that receive this job's artifacts (api/payload.ts `dotenvVariables`). GitLab passes a report
 * on as variables only: a report file that `artifacts:paths` does not name itself is then taken out
 * of the stored archive, so later jobs do not find it among their files. Both the report paths (the
 * pipeline file's, which a job may have written as a child pipeline's) and the archive (the job's)
 * are hostile input here: a path is only ever resolved inside the server's work dir, and the archive
 * is unpacked within a byte budget.
 *
 * Format, as GitLab reads it: one `KEY=VALUE` per line, blank lines and `#` comments ignored, the key a
 * variable name, the value taken as is (one pair of surrounding quotes removed). Limits as GitLab's:
 * 5 KiB per file, 50 variables per job; a report over them, or with a line that is not `KEY=VALUE`, is
 * refused whole (a warning in the server log) so that a job never runs with half of its inputs.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { hasCode } from '../../util/errors.js';
import type { ServerContext } from '../context.js';
import { filesFromArchive, normalise } from './archive-files.js';
import type { BuildRecord } from './store.js';

export const DOTENV_MAX_BYTES = 5 * 1024;
export const DOTENV_MAX_VARIABLES = 50;
/**
 * Taking a report out of an archive unpacks it on the server's disk: at most this many times the
 * upload limit. An archive that holds more keeps its report file (a warning says so); its variables
 * are read all the same.
 */
const REWRITE_INFLATE_FACTOR = 16;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Parses dotenv text; throws an Error naming the first bad line. */
export function parseDotenv(text: string): Array<{ key: string; value: string }> {
  const variables: Array<{ key: string; value: string }> = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const eq = line.indexOf('=');
    const key = eq < 0 ? '' : line.slice(0, eq).trim();
    if (!NAME.test(key)) throw new Error(`line ${index + 1} is not KEY=VALUE with a variable name as KEY`);
    let value = line.slice(eq + 1);
    const quoted = /^(["'])(.*)\1$/.exec(value.trim());
    if (quoted) value = quoted[2] ?? '';
    variables.push({ key, value });
  });
  return variables;
}

/** Records a report's variables on `build`; throws when there are more than GitLab allows. */
function keepDotenv(ctx: ServerContext, build: BuildRecord, variables: Array<{ key: string; value: string }>): void {
  if (variables.length > DOTENV_MAX_VARIABLES) throw new Error(`${variables.length} variables, over the limit of ${DOTENV_MAX_VARIABLES}`);
  ctx.store.changeBuild(build, (b) => {
    b.dotenv = variables;
  });
}

/**
 * A dotenv report uploaded on its own (API v4, `artifact_type=dotenv`): `text` is the report's
 * content, every file of it. Throws an Error saying what is wrong (too big, a bad line, too many
 * variables); nothing is recorded then.
 */
export function applyDotenvText(ctx: ServerContext, build: BuildRecord, text: string): void {
  if (Buffer.byteLength(text) > DOTENV_MAX_BYTES) throw new Error(`the report is over the limit of ${DOTENV_MAX_BYTES} bytes`);
  keepDotenv(ctx, build, parseDotenv(text));
}

/** Reads `build`'s dotenv report out of its just-stored artifacts into `build.dotenv`. Never throws. */
export async function applyDotenvReport(ctx: ServerContext, build: BuildRecord): Promise<void> {
  const files = build.job.artifacts?.reports?.dotenv ?? [];
  if (files.length === 0 || !build.artifacts) return;
  try {
    const texts = await filesFromArchive(build.artifacts.path, files, { maxBytes: DOTENV_MAX_BYTES, what: 'a dotenv report' }, ctx.closing);
    const variables = files.flatMap((file) => {
      const text = texts.get(normalise(file));
      if (text === undefined) {
        ctx.logger.warn({ buildId: build.id, file }, 'dotenv report file not in the artifacts');
        return [];
      }
      return parseDotenv(text);
    });
    keepDotenv(ctx, build, variables);
  } catch (error) {
    ctx.logger.warn({ err: error, buildId: build.id }, 'dotenv report refused; later jobs get none of its variables');
  }
  await removeReportFiles(ctx, build, files).catch((error: unknown) => {
    const reason = hasCode(error, 'ARCHIVE_OVER_LIMIT')
      ? `the archive unpacks to more than ${REWRITE_INFLATE_FACTOR} times --max-artifacts-size`
      : (error as Error).message;
    ctx.logger.warn({ buildId: build.id, reason }, 'could not take the dotenv report out of the artifacts; later jobs find it among their files');
  });
}

/** The report files that `artifacts:paths` does not name too (as a file, a directory above it or a glob). */
function reportOnlyFiles(paths: readonly string[], files: readonly string[], isMatch: (pattern: string) => (path: string) => boolean): string[] {
  const named = paths.map((pattern) => normalise(pattern).replace(/\/+$/, ''));
  return files.map(normalise).filter((file) => !named.some((pattern) => pattern === '.' || file === pattern || file.startsWith(`${pattern}/`) || isMatch(pattern)(file)));
}

/** Rewrites the stored archive without the report-only files; removes it when nothing else is left. */
async function removeReportFiles(ctx: ServerContext, build: BuildRecord, files: readonly string[]): Promise<void> {
  const stored = build.artifacts;
  if (!stored) return;
  const { default: picomatch } = await import('picomatch');
  const drop = reportOnlyFiles(build.job.artifacts?.paths ?? [], files, (pattern) => picomatch(pattern, { dot: true }));
  if (drop.length === 0) return;
  const [{ detectFormat }, { extractArchive }, { createArchive }, { selectFiles }, { ExtractBudget }] = await Promise.all([
    import('../../artifacts/format.js'),
    import('../../artifacts/extract.js'),
    import('../../artifacts/create.js'),
    import('../../artifacts/select.js'),
    import('../../artifacts/budget.js'),
  ]);
  // Beside the uploads, on the data dir's disk: the rewritten archive is renamed into place.
  const work = await mkdtemp(join(dirname(await ctx.artifacts.tempPath()), 'report-'));
  const unpacked = join(work, 'files');
  try {
    const format = await detectFormat(stored.path);
    await extractArchive(stored.path, unpacked, ctx.closing, { budget: new ExtractBudget(REWRITE_INFLATE_FACTOR * ctx.settings.maxArtifactsSize) });
    // The paths come from the pipeline file: one that climbs out of the extracted files names nothing in the archive.
    await Promise.all(drop.map((file) => resolve(unpacked, file)).filter((path) => path.startsWith(`${unpacked}${sep}`)).map((path) => rm(path, { force: true })));
    const selection = await selectFiles(unpacked, { paths: ['.'] }, () => undefined, ctx.closing);
    if (selection.files === 0) {
      await ctx.artifacts.remove(build);
      return;
    }
    const out = join(work, 'archive');
    const size = await createArchive(unpacked, selection.entries, out, format === 'zip' ? 'zip' : 'tar.gz', ctx.closing);
    await ctx.artifacts.commit(build, out, stored.filename, size, stored.expireAt);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
