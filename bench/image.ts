/**
 * Container image benchmark: size of the image the Dockerfile builds and its build time,
 * cold (`--no-cache`, every stage from the base: npm ci, tsc, apt-get) and cached (nothing changed).
 * The base is the local stand-in of .ci/node-base-standin.sh (made first when missing; not timed), so
 * the size above the base is the figure that carries over to the official node:20-bookworm-slim.
 * Needs a docker engine.
 */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const TAG = 'ci-runner-bench/image:latest';

async function build(noCache: boolean): Promise<number> {
  const t0 = performance.now();
  await execa('docker', ['build', ...(noCache ? ['--no-cache'] : []), '--tag', TAG, '.'], { cwd: REPO });
  return performance.now() - t0;
}

async function sizeOf(image: string): Promise<number> {
  return Number((await execa('docker', ['image', 'inspect', '--format', '{{.Size}}', image])).stdout);
}

export async function run(): Promise<void> {
  const engine = await execa('docker', ['version', '--format', '{{.Server.Version}}'], { reject: false });
  if (engine.exitCode !== 0) {
    process.stdout.write('skipped: no docker engine answers\n');
    return;
  }
  await execa(fileURLToPath(new URL('../.ci/node-base-standin.sh', import.meta.url)), [], { stdio: 'inherit' });
  const cold = await build(true);
  const cached = await build(false);
  const base = /^ARG NODE_IMAGE=(\S+)/m.exec((await execa('grep', ['^ARG NODE_IMAGE=', 'Dockerfile'], { cwd: REPO })).stdout)?.[1] ?? 'node:20-bookworm-slim';
  const [size, baseSize] = await Promise.all([sizeOf(TAG), sizeOf(base)]);
  const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`;
  process.stdout.write(`image size      ${mb(size)} (${mb(size - baseSize)} above the ${base} base of ${mb(baseSize)})\n`);
  process.stdout.write(`build, cold     ${(cold / 1000).toFixed(1)} s (--no-cache, base present)\n`);
  process.stdout.write(`build, cached   ${(cached / 1000).toFixed(1)} s\n`);
  await execa('docker', ['image', 'rm', TAG], { reject: false });
}
