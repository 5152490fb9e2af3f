/**
 * The image's ENTRYPOINT, as GitLab Runner treats it: the build stages do not replace it but pass the
 * job's shell as its command (`<entrypoint> /bin/sh -c <wrapper> <script>`), so a wrapper ending in
 * `exec "$@"` sets things up around the script. The job's `image: { entrypoint: [...] }` replaces it
 * (`[""]` removes it). An entrypoint that never starts the shell (a plain binary such as `/bin/echo`)
 * would let the stage "succeed" without running anything: the wrapper marks a file when it starts,
 * and a stage whose file stayed empty fails saying so. The runner's own short containers
 * (image-user.ts) always use `--entrypoint /bin/sh`.
 */
import { readFile, rm } from 'node:fs/promises';
import { writeNewFile } from '../../util/new-file.js';

export interface Entrypoint {
  /** Between the flags and the image: `--entrypoint <first>` for a replaced one, else nothing. */
  flags: string[];
  /** Between the image and `/bin/sh`: the rest of a replacing entrypoint. */
  prefix: string[];
  /** What runs first in the container; empty when the shell does. */
  effective: string[];
}

/** The image's entrypoint, or the job's replacement when it gave one. */
export function entrypointFor(image: readonly string[], replacement: readonly string[] | undefined): Entrypoint {
  if (replacement === undefined || replacement.length === 0) return { flags: [], prefix: [], effective: [...image] };
  const [first = '', ...rest] = replacement;
  // Docker's own reading: `[""]` is no entrypoint.
  const effective = first === '' && rest.length === 0 ? [] : [...replacement];
  return { flags: ['--entrypoint', first], prefix: rest, effective };
}

/** The file the wrapper writes `started` into, beside the script (mounted read-write on its own). */
export async function createStartedMarker(scriptPath: string): Promise<string> {
  const path = `${scriptPath}.started`;
  // The entrypoint may switch users (gosu, su-exec) before it starts the shell; the file holds no secret.
  await writeNewFile(path, '', 0o666);
  return path;
}

/** True when the wrapper started; removes the file. */
export async function shellStarted(markerPath: string): Promise<boolean> {
  const text = await readFile(markerPath, 'utf8').catch(() => '');
  await rm(markerPath, { force: true });
  return text.startsWith('started');
}

/** The trace's explanation for a stage whose entrypoint never started the shell. */
export function notStartedMessage(effective: readonly string[], image: string, exitCode: number): string {
  return (
    `ERROR: the image's ENTRYPOINT ${JSON.stringify(effective)} did not start the job's shell (it exited with status ${exitCode}). ` +
    `An entrypoint must end in exec "$@" to run the job; otherwise replace it in .gitlab-ci.yml: image: { name: ${image}, entrypoint: [""] }`
  );
}
