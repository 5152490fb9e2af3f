import { packageManifest } from './package-root.js';

const GO_ARCH: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64', loong64: 'loong64' };

const pkg: { version?: string; gitHead?: string } = (() => {
  try {
    return packageManifest();
  } catch {
    return {};
  }
})();

/** The package version, read once from the package's package.json. */
export const VERSION: string = pkg.version ?? '0.0.0';

/** The commit the package was built from (npm records `gitHead` when it packs a git checkout), as GitLab Runner's short revision; `unknown` otherwise. */
export const REVISION: string = pkg.gitHead ? pkg.gitHead.slice(0, 8) : 'unknown';

/** `<os>/<arch>` in Go's words, as GitLab Runner's CI_RUNNER_EXECUTABLE_ARCH (linux/amd64, linux/arm64, …). */
export const EXECUTABLE_ARCH = `${process.platform === 'win32' ? 'windows' : process.platform}/${GO_ARCH[process.arch] ?? process.arch}`;

export const RUNNER_NAME = 'ci-runner';
