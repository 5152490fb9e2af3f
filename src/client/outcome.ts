/**
 * How each endpoint's answers are classified (PROTOCOL.md §4, §12): the one table of what is done,
 * retried, or final. Transport errors are status -1, as in the legacy client.
 */

export type Endpoint =
  | 'registerRunner'
  | 'deleteRunner'
  | 'verifyRunner'
  | 'requestBuild'
  | 'updateBuild'
  | 'patchTrace'
  | 'uploadArtifacts'
  | 'downloadArtifacts';

/** `ok`: success; `retry`: transient, try again with backoff; `final`: stop, it will not get better. */
export type Outcome = 'ok' | 'retry' | 'final';

export const TRANSPORT_ERROR = -1;

const successStatus: Record<Endpoint, number[]> = {
  registerRunner: [201],
  deleteRunner: [200],
  verifyRunner: [404],
  requestBuild: [201, 204, 404],
  updateBuild: [200],
  patchTrace: [202],
  uploadArtifacts: [201],
  downloadArtifacts: [200],
};

/** Statuses that will not change on a retry, per endpoint. 401 is treated like 403 (§12 item 1). */
const finalStatus: Record<Endpoint, number[]> = {
  registerRunner: [400, 401, 403, 404, 422],
  deleteRunner: [400, 401, 403],
  verifyRunner: [401, 403],
  requestBuild: [401, 403],
  updateBuild: [401, 403, 404],
  patchTrace: [401, 403, 404, 416],
  uploadArtifacts: [400, 401, 403, 404, 405, 413],
  downloadArtifacts: [401, 403, 404],
};

/** Classifies a status (or {@link TRANSPORT_ERROR}) for an endpoint. Unknown statuses are retried. */
export function classify(endpoint: Endpoint, status: number): Outcome {
  if (successStatus[endpoint].includes(status)) return 'ok';
  if (finalStatus[endpoint].includes(status)) return 'final';
  return 'retry';
}
