/**
 * Where a path under the slot dir is for the build stages when they run elsewhere (docker's bind
 * mount, kubernetes' pod): the slot dir itself is `buildsDir`, paths below it follow it; any other
 * path is unchanged.
 */
export function pathUnderBuildsDir(hostPath: string, slotDir: string | undefined, buildsDir: string): string {
  if (slotDir === undefined) return hostPath;
  if (hostPath === slotDir) return buildsDir;
  return hostPath.startsWith(`${slotDir}/`) ? `${buildsDir}${hostPath.slice(slotDir.length)}` : hostPath;
}
