/** A stand-in for the docker CLI whose engine is down until a file appears. */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Writes `<dir>/docker`: each call appends its DOCKER_HOST to `<dir>/calls`; it answers like a
 * running engine once `<dir>/engine-up` exists, and like a stopped one before. With `hang`, it
 * never answers. Returns its path.
 */
export async function fakeDockerCli(dir: string, options: { hang?: boolean } = {}): Promise<string> {
  const path = join(dir, 'docker');
  const script = `#!/bin/sh
echo "\${DOCKER_HOST:-}" >> '${join(dir, 'calls')}'
${options.hang ? 'exec sleep 60' : ''}
if [ -e '${join(dir, 'engine-up')}' ]; then printf 'Client:\\n Version: 27.5.0\\n\\nServer: Docker Engine\\n Engine:\\n  Version: 27.5.1\\n'; exit 0; fi
echo "Client: Docker Engine - Community"
echo "Cannot connect to the Docker daemon at \${DOCKER_HOST:-unix:///var/run/docker.sock}. Is the docker daemon running?" >&2
exit 1
`;
  await writeFile(path, script);
  await chmod(path, 0o755);
  return path;
}
