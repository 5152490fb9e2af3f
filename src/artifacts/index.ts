/**
 * Artifacts and cache for a job (docs/protocol-v1.md §8): the four stage functions the agent calls, in stage
 * order download_artifacts → restore_cache → (build) → archive_cache → upload_artifacts (§9.1).
 */
export type { ArtifactsContext } from './context.js';
export { ArtifactsError, type ArtifactsErrorCode } from './errors.js';
export { downloadArtifacts, dependenciesToDownload, type DownloadOptions } from './download.js';
export { uploadArtifacts, shouldUpload, type UploadOptions } from './upload.js';
export { restoreCache, archiveCache, type CacheOptions } from './cache.js';
export { extractArchive, type ExtractSummary } from './extract.js';
export { detectFormat, type ArchiveFormat } from './format.js';
export { createArchive, type CreateFormat } from './create.js';
export { selectFiles, type Selection, type SelectedEntry, type SelectionSpec } from './select.js';
export { artifactsFileName, cacheFilePath, expandVariables } from './naming.js';
