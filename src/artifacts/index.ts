/**
 * Artifacts for a job (docs/protocol-v1.md §8): the two stage functions the agent calls, download_artifacts
 * and upload_artifacts (§9.1), and the archive parts the cache (src/cache/) is made of too.
 */
export type { ArtifactsContext } from './context.js';
export { ArtifactsError, type ArtifactsErrorCode } from './errors.js';
export { downloadArtifacts, downloadDependency, type DependencyContext, type DownloadOptions } from './download.js';
export { uploadArtifacts, uploadEntry, type EntryContext, type UploadOptions } from './upload.js';
export { extractArchive, type ExtractSummary } from './extract.js';
export { detectFormat, type ArchiveFormat } from './format.js';
export { createArchive, type CreateFormat } from './create.js';
export { selectFiles, type Selection, type SelectedEntry, type SelectionSpec } from './select.js';
export { artifactsFileName, dependenciesToDownload, expandVariables, shouldUpload } from './naming.js';
