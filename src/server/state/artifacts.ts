/**
 * Artifact files on disk under `<dataDir>/artifacts/<build id>/`. Uploads stream into
 * `<dataDir>/tmp` first and are renamed into place only when complete, so a cut upload never
 * replaces a good archive.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './private-files.js';
import type { ArtifactsRecord, BuildRecord, Store } from './store.js';

export class ArtifactStore {
  constructor(
    private readonly dataDir: string,
    private readonly store: Store,
  ) {}

  /** Where the archive of build `buildId` lives. */
  archivePath(buildId: number): string {
    return join(this.dataDir, 'artifacts', String(buildId), 'archive');
  }

  /** A fresh temp file path for an incoming upload (the directory exists when this resolves). */
  async tempPath(): Promise<string> {
    const dir = join(this.dataDir, 'tmp');
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    return join(dir, `upload-${randomBytes(8).toString('hex')}`);
  }

  /**
   * Moves a finished upload (or a rewritten archive, whatever made it) into place, the owner's alone,
   * replacing the build's previous artifacts.
   */
  async commit(build: BuildRecord, tempPath: string, filename: string, size: number, expireAt: Date | null): Promise<ArtifactsRecord> {
    const path = this.archivePath(build.id);
    await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
    await chmod(tempPath, PRIVATE_FILE_MODE);
    await rename(tempPath, path);
    build.artifacts = { filename: safeFilename(filename), size, path, expireAt };
    this.store.saveBuild(build);
    return build.artifacts;
  }

  /** Where build `buildId`'s report of `type` lives (`type` is one of the server's report types). */
  reportPath(buildId: number, type: string): string {
    return join(this.dataDir, 'artifacts', String(buildId), 'reports', type);
  }

  /** Moves a finished report upload into place, replacing the build's previous report of that type. */
  async commitReport(tempPath: string, buildId: number, type: string): Promise<string> {
    const path = this.reportPath(buildId, type);
    await mkdir(dirname(path), { recursive: true });
    await rename(tempPath, path);
    return path;
  }

  async remove(build: BuildRecord): Promise<void> {
    const artifacts = build.artifacts;
    build.artifacts = null;
    this.store.saveBuild(build);
    if (artifacts) await rm(artifacts.path, { force: true });
  }
}

/** The artifacts of `build` unless absent or expired (expired ones 404 and leave `depends_on_builds`). */
export function liveArtifacts(build: BuildRecord, now = Date.now()): ArtifactsRecord | undefined {
  const artifacts = build.artifacts;
  if (!artifacts) return undefined;
  if (artifacts.expireAt && artifacts.expireAt.getTime() <= now) return undefined;
  return artifacts;
}

/** A file name safe for `Content-Disposition`: a base name without quotes or control characters. */
export function safeFilename(name: string): string {
  const base = basename(name.replace(/\\/g, '/')).replace(/[\u0000-\u001f"\u007f]/g, '_').trim();
  return base === '' || base === '.' || base === '..' ? 'artifacts.zip' : base;
}
