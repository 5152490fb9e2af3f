import { arch, platform, version as nodeVersion } from 'node:process';
import type { RunnerInfo } from '../protocol/types.js';
import { RUNNER_NAME, VERSION } from '../util/version.js';

/** The `info` object for E1–E5 (§4.10). During registration (no executor yet) every feature is false. */
export function runnerInfo(executor?: string): RunnerInfo {
  const known = executor !== undefined && executor !== '';
  // Executors that run jobs in their image, with services.
  const docker = executor === 'docker' || executor === 'kubernetes';
  return {
    name: RUNNER_NAME,
    version: VERSION,
    platform,
    architecture: arch,
    ...(known ? { executor } : {}),
    features: {
      variables: known,
      image: docker,
      services: docker,
      artifacts: known,
      features: known,
      cache: known,
    },
  };
}

/** The User-Agent sent on every request. */
export const USER_AGENT = `${RUNNER_NAME} ${VERSION} (node ${nodeVersion}; ${platform}/${arch})`;
