/**
 * The job's cap on bytes extracted from archives (`artifacts_extract_limit`), shared by every
 * dependency's artifacts and the cache the job restores. An archive is measured by the sizes its
 * entries declare (tar headers, the zip central directory) during the validation pass, so one that
 * would go past the cap is refused before anything of it is written; the extraction pass counts
 * again as it writes (a zip's declared sizes are checked against the data by yauzl).
 */
import { ArtifactsError } from './errors.js';
import { megabytes } from './naming.js';

/** The config key, for messages: a user who hits the cap must know what to change. */
export const EXTRACT_LIMIT_KEY = 'artifacts_extract_limit';

export class ExtractBudget {
  private spent = 0;

  /** `limitBytes` > 0. */
  constructor(readonly limitBytes: number) {}

  /** Bytes extracted by this job so far. */
  get used(): number {
    return this.spent;
  }

  /** A fresh count for one pass over one archive, against what earlier archives used. */
  tally(): ExtractTally {
    return new ExtractTally(this);
  }

  /** Books what an archive really extracted, once it is on disk. */
  spend(bytes: number): void {
    this.spent += bytes;
  }

  /** The refusal for an archive of at least `archiveBytes`. */
  exceeded(archiveBytes: number): ArtifactsError {
    const left = Math.max(0, this.limitBytes - this.spent);
    const earlier = this.spent > 0 ? `; earlier archives of this job took ${megabytes(this.spent)} of it` : '';
    return new ArtifactsError(
      'ARCHIVE_OVER_LIMIT',
      `the archive holds at least ${megabytes(archiveBytes)} of files, more than the ${megabytes(left)} left of the job's ${EXTRACT_LIMIT_KEY} (${megabytes(this.limitBytes)}${earlier}); nothing of it was extracted. Raise ${EXTRACT_LIMIT_KEY} in the runner's config.toml, or make the archive smaller`,
    );
  }
}

/** Counts the file bytes of one archive's entries; throws ARCHIVE_OVER_LIMIT past the budget. */
export class ExtractTally {
  private bytes = 0;

  constructor(private readonly budget: ExtractBudget) {}

  get total(): number {
    return this.bytes;
  }

  add(entry: { kind: string; size: number }): void {
    if (entry.kind !== 'file') return;
    this.bytes += entry.size;
    if (this.budget.used + this.bytes > this.budget.limitBytes) throw this.budget.exceeded(this.bytes);
  }
}
