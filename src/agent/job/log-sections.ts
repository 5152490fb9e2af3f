/**
 * The job log's sections, as GitLab Runner 19 writes them around each stage (helpers/build_section.go):
 *
 *     section_start:<unix time>:<stage>\r\e[0K
 *     \e[0K\e[36;1m<the stage's description>\e[0;m\e[0;m
 *     …the stage's output…
 *     section_end:<unix time>:<stage>\r\e[0K
 *
 * The markers are written when the server asks for them (v4's `features.trace_sections`, which GitLab
 * always sends); the description line always. On a terminal `\r\e[0K` erases the marker; GitLab's page
 * folds the section and shows its duration.
 *
 * A job may print sections of its own; they pass through. One it leaves open would fold the runner's
 * lines after it (`ERROR: Job failed` among them) into itself on GitLab's page, collapsed if it said
 * so: the stage closes what its output left open (the trace follows each stage's sections,
 * trace/section-watch.ts) before its own section ends. What the job can still do is what any output
 * can: print text that looks like the runner's, inside its own stage's section.
 */
import { stageDescription, type StageName } from '../../executors/common/stages.js';
import { CLEAR_LINE, RESET } from './messages.js';

const BOLD_CYAN = '\u001b[36;1m';

/** `section_start:<unix time>:<name><options>\r\e[0K`; `time` another text for the time (a shell's). */
export function sectionStart(name: string, options = '', time = unixNow()): string {
  return `section_start:${time}:${name}${options}\r${CLEAR_LINE}`;
}

/** `section_end:<unix time>:<name>\r\e[0K`. */
export function sectionEnd(name: string, time = unixNow()): string {
  return `section_end:${time}:${name}\r${CLEAR_LINE}`;
}

/** The cyan line that opens a stage (GitLab Runner's Println of its description). */
export function stageHeading(stage: StageName, executor: string): string {
  return `${CLEAR_LINE}${BOLD_CYAN}${stageDescription(stage, executor)}${RESET}${RESET}\n`;
}

function unixNow(): string {
  return String(Math.floor(Date.now() / 1000));
}

/** The sections of one job's log. */
export class LogSections {
  /**
   * @param write the runner's lines into the job log
   * @param markers the server folds sections (v4 `features.trace_sections`)
   * @param executor its name, for prepare_executor's line
   */
  constructor(
    private readonly write: (text: string) => void,
    readonly markers: boolean,
    private readonly executor: string,
  ) {}

  /** Opens `stage`'s section and writes its heading (two writes, as GitLab Runner's are). */
  open(stage: StageName): void {
    if (this.markers) this.write(sectionStart(stage));
    this.write(stageHeading(stage, this.executor));
  }

  /**
   * The text that opens `stage` (marker and heading); `time`: the text of the marker's time, when a
   * script prints it (a shell expression's placeholder).
   */
  opening(stage: StageName, time?: string): string {
    return `${this.markers ? sectionStart(stage, '', time) : ''}${stageHeading(stage, this.executor)}`;
  }

  /** Closes what the stage's output left open (`left`, innermost first), then `stage`'s section. */
  close(stage: StageName, left: readonly string[] = []): void {
    if (!this.markers) return;
    this.write(this.closing(stage, left));
  }

  /** Closes what a part of a stage left open (`left`, innermost first; see `close`). */
  closeLeft(left: readonly string[]): void {
    if (this.markers && left.length > 0) this.write(left.map((name) => sectionEnd(name)).join(''));
  }

  /** The text that closes `stage` (see `close`); `time` as for `opening`. */
  closing(stage: StageName, left: readonly string[] = [], time?: string): string {
    if (!this.markers) return '';
    return `${left.map((name) => sectionEnd(name, time)).join('')}${sectionEnd(stage, time)}`;
  }

  /** Runs `body` inside `stage`'s section; the section ends however `body` does. */
  async around<T>(stage: StageName, body: () => Promise<T>): Promise<T> {
    this.open(stage);
    try {
      return await body();
    } finally {
      this.close(stage);
    }
  }
}
