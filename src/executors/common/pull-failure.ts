/**
 * Why an image could not be had, as GitLab Runner 19 tells it from the pull's error or a pod's waiting
 * message (common/classify_image_pull_failure.go): the registry could not be reached (DNS, TCP, TLS, a
 * timeout, a reset) is `runner_external_dependency_failure`, worth retrying; an image or tag that does
 * not exist, or that the job may not pull, is `runner_configuration_error`; anything else
 * `image_pull_failure`. The final update maps a reason the server does not list to an older one.
 */
import type { FailureReason } from '../../protocol/v4/failure-reason.js';

const NETWORK = ['dial tcp', 'connection refused', 'no such host', 'i/o timeout', 'tls handshake', 'client.timeout exceeded', 'request canceled', 'connection reset'];
const MISSING = ['not found', 'manifest unknown'];
const DENIED = ['pull access denied', 'access to the resource is denied', 'no basic auth credentials', 'repository does not exist or may require', 'unauthorized', 'authentication required'];

export type PullFailure = Extract<FailureReason, 'runner_external_dependency_failure' | 'runner_configuration_error' | 'image_pull_failure'>;

export function classifyPullFailure(message: string): PullFailure {
  const lower = message.toLowerCase();
  if (NETWORK.some((word) => lower.includes(word))) return 'runner_external_dependency_failure';
  if (MISSING.some((word) => lower.includes(word)) || DENIED.some((word) => lower.includes(word))) return 'runner_configuration_error';
  return 'image_pull_failure';
}
