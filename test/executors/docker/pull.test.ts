/**
 * A pull's progress reaches the trace as a few lines. The CLI here is a stand-in script (the `cli`
 * option takes any docker-compatible CLI): no registry can be reached from the tests.
 */
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DockerCli } from '../../../src/executors/docker/cli.js';
import { ensureImage } from '../../../src/executors/docker/image.js';

/** A CLI whose `pull` prints layer progress the way docker does without a TTY, then makes the image "present". */
async function fakeCli(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ci-runner-fake-docker-'));
  const path = join(dir, 'docker');
  const layers = Array.from({ length: 12 }, (_, i) => `${(0xabc000000000 + i).toString(16)}`);
  const progress = layers.flatMap((l) => [`${l}: Pulling fs layer`, `${l}: Downloading`, `${l}: Verifying Checksum`, `${l}: Download complete`, `${l}: Pull complete`]);
  await writeFile(
    path,
    [
      '#!/bin/sh',
      `state=${join(dir, 'pulled')}`,
      'case "$1 $2" in',
      '  "image inspect") [ -e "$state" ] && echo \'"sha256:0123456789abcdef" "" null\' && exit 0; echo "Error: No such image" >&2; exit 1 ;;',
      '  "pull "*)',
      '    echo "1: Pulling from library/thing"',
      ...progress.map((line) => `    echo '${line}'`),
      '    echo "Digest: sha256:feedface"',
      '    echo "Status: Downloaded newer image for thing:1"',
      '    touch "$state"; exit 0 ;;',
      'esac',
      'exit 2',
      '',
    ].join('\n'),
  );
  await chmod(path, 0o755);
  return path;
}

describe('image pulls', () => {
  it('shows a pull as a few lines: start, digest, status and a layer count', async () => {
    const docker = new DockerCli({ cli: await fakeCli() });
    const lines: string[] = [];
    const image = await ensureImage(docker, 'thing:1', ['if-not-present'], { log: (line) => lines.push(line), signal: new AbortController().signal });
    expect(image).toEqual({ id: 'sha256:0123456789abcdef', user: '', entrypoint: [] });
    expect(lines).toEqual(['Pulling docker image thing:1 ...', 'Digest: sha256:feedface', 'Status: Downloaded newer image for thing:1', 'Pulled 12 layers']);
  });
});
