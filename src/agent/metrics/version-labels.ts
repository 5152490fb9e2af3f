/**
 * The labels of `gitlab_runner_version_info`, GitLab Runner's names (common/version.go) with
 * ci-runner's values: `go_version` holds Node's version, `os` and `architecture` Go's spellings of
 * the platform, so a dashboard's filters such as `architecture="amd64"` keep matching.
 */
import { RUNNER_NAME, VERSION } from '../../util/version.js';

const GO_ARCH: Readonly<Record<string, string>> = { x64: 'amd64', ia32: '386', arm: 'arm', arm64: 'arm64', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };

export function versionLabels(): Record<string, string> {
  return {
    name: RUNNER_NAME,
    version: VERSION,
    revision: 'unknown',
    branch: 'unknown',
    go_version: `node${process.versions.node}`,
    built_at: 'unknown',
    os: process.platform,
    architecture: GO_ARCH[process.arch] ?? process.arch,
  };
}
