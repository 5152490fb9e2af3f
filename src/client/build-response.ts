/**
 * E4's answer (docs/protocol-v1.md §4.4) turned into what the poll loop acts on: no build (204, with the next
 * `X-GitLab-Last-Update`), a refused token, a failure to back off from, a build, or a 201 whose body
 * cannot be run. An unrunnable build keeps its id and token when they can be read, so the runner can
 * report it failed instead of leaving it running on the server (§12 item 22).
 */
import { parseBuildPayload, type BuildPayloadResult } from '../protocol/build-payload.js';
import type { BuildPayload } from '../protocol/types.js';
import { type ApiResult, readTextIfWhole } from './api-call.js';
import { TRANSPORT_ERROR } from './retryable.js';
import { drain, header, type HttpResponse } from './transport.js';

export type RequestBuildResult =
  | (ApiResult & { kind: 'build'; build: BuildPayload })
  /** 201 whose body is not a valid build: report it failed when id and token are known (§12 item 22). */
  | (ApiResult & { kind: 'invalid-build'; message: string; id?: number; token?: string })
  | (ApiResult & { kind: 'none'; lastUpdate?: string })
  | (ApiResult & { kind: 'forbidden' })
  | (ApiResult & { kind: 'error' });

const JSON_TYPE = /^application\/json\s*(;|$)/i;

/** How a 201's decoded body becomes the job model: v1's `parseBuildPayload`, or v4's `parseJobPayload`. */
export type PayloadParser = (body: unknown) => BuildPayloadResult;

/**
 * Reads E4's (or V6's) response (`result` is its classified status) to the end and says what it
 * means; `parse` reads a 201's body; `keepBody` keeps that body as it came on the build (`response_body`).
 */
export async function decodeBuildResponse(response: HttpResponse, result: ApiResult, parse: PayloadParser = parseBuildPayload, options: { keepBody?: boolean } = {}): Promise<RequestBuildResult> {
  if (response.status !== 201) {
    await drain(response);
    const nextUpdate = header(response.headers, 'x-gitlab-last-update');
    if (result.outcome === 'ok') return { ...result, kind: 'none', ...(nextUpdate ? { lastUpdate: nextUpdate } : {}) };
    if (result.outcome === 'final') return { ...result, kind: 'forbidden' };
    return { ...result, kind: 'error' };
  }
  const type = header(response.headers, 'content-type') ?? '';
  const text = await readTextIfWhole(response);
  if (text === undefined) return { status: TRANSPORT_ERROR, outcome: 'retry', kind: 'error', error: new Error('build body was cut off') };
  const decoded = decodeAssignedBuild(text, type, result, parse);
  if (decoded.kind === 'build' && options.keepBody) decoded.build.response_body = text;
  return decoded;
}

/** A 201's body: a build only when it is JSON, sent as JSON, and a valid payload. */
function decodeAssignedBuild(text: string, type: string, result: ApiResult, parse: PayloadParser): RequestBuildResult {
  let decoded: unknown;
  try {
    decoded = JSON.parse(text);
  } catch {
    return { ...result, kind: 'invalid-build', message: 'the server assigned a build but its body is not JSON' };
  }
  const parsed = parse(decoded);
  const known = parsed.ok ? { id: parsed.build.id, token: parsed.build.token } : { id: parsed.id, token: parsed.token };
  if (!JSON_TYPE.test(type)) {
    return invalidBuild(result, `the server assigned a build with Content-Type ${JSON.stringify(type)} instead of application/json`, known);
  }
  if (!parsed.ok) return invalidBuild(result, `invalid build payload: ${parsed.message}`, known);
  return { ...result, kind: 'build', build: parsed.build };
}

function invalidBuild(result: ApiResult, message: string, known: { id?: number | undefined; token?: string | undefined }): RequestBuildResult {
  return {
    ...result,
    kind: 'invalid-build',
    message,
    ...(known.id !== undefined ? { id: known.id } : {}),
    ...(known.token !== undefined ? { token: known.token } : {}),
  };
}
