/**
 * Small text files read out of a stored artifacts archive (tar.gz, tar or zip, by magic bytes),
 * without extracting it: a dotenv report, a generated child pipeline. Each file has a size limit,
 * so a huge entry is refused before it is read.
 */

/** A path as archives and `.gitlab-ci.yml` write it, without leading `./`. */
export const normalise = (path: string): string => path.replace(/^(\.\/)+/, '');

/** Reads the named files' text out of `archive`; a file over `limit.maxBytes` fails the read, naming `limit.what`. */
export async function filesFromArchive(archive: string, names: readonly string[], limit: { maxBytes: number; what: string }, signal: AbortSignal): Promise<Map<string, string>> {
  const wanted = new Set(names.map(normalise));
  const found = new Map<string, string>();
  // Loaded on first use: the archive libraries are not needed until a job has a report or a child pipeline.
  const [{ detectFormat }, { readTar }, { readZip }] = await Promise.all([
    import('../../artifacts/format.js'),
    import('../../artifacts/tar-read.js'),
    import('../../artifacts/zip-read.js'),
  ]);
  const format = await detectFormat(archive);
  const visit = async (entry: { name: string; kind: string; size: number; content?: () => Promise<AsyncIterable<Uint8Array>> }): Promise<void> => {
    const name = normalise(entry.name);
    if (!wanted.has(name) || entry.kind !== 'file' || !entry.content) return;
    if (entry.size > limit.maxBytes) throw new Error(`${name} is ${entry.size} bytes, over the ${limit.maxBytes}-byte limit of ${limit.what}`);
    const chunks: Buffer[] = [];
    for await (const chunk of await entry.content()) chunks.push(Buffer.from(chunk));
    found.set(name, Buffer.concat(chunks).toString('utf8'));
  };
  if (format === 'zip') await readZip(archive, visit, signal);
  else await readTar(archive, visit, signal, format === 'tar.gz');
  return found;
}
