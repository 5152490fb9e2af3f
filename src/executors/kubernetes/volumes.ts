/**
 * `[runners.kubernetes.volumes]` as the pod's volumes and every container's mounts, as GitLab Runner 19
 * makes them: host paths, PVCs, ConfigMaps, Secrets, emptyDirs, CSI and NFS volumes, in that order of
 * kinds. Mount paths, sub paths and PVC names may hold the job's `$VARIABLES` (expanded here); a PVC
 * named twice is one volume mounted twice. A volume mounted at the builds dir replaces the executor's
 * own emptyDir there (a PVC or a tmpfs for the checkout). Pure: no I/O.
 */
import type { V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { KubernetesVolumes } from './options.js';

export type Expand = (text: string) => string;

const itemsOf = (map: Readonly<Record<string, string>>) => (Object.keys(map).length > 0 ? { items: Object.entries(map).map(([key, path]) => ({ key, path })) } : {});

export function userVolumes(v: KubernetesVolumes, expand: Expand): V1Volume[] {
  const pvcs = new Map<string, V1Volume>();
  for (const pvc of v.pvc) {
    const name = expand(pvc.name);
    if (!pvcs.has(name)) pvcs.set(name, { name, persistentVolumeClaim: { claimName: name } });
  }
  return [
    ...v.host_path.map((h) => ({ name: h.name, hostPath: { path: h.host_path ?? h.mount_path } })),
    ...v.secret.map((s) => ({ name: s.name, secret: { secretName: s.name, ...itemsOf(s.items) } })),
    ...pvcs.values(),
    ...v.config_map.map((c) => ({ name: c.name, configMap: { name: c.name, ...itemsOf(c.items) } })),
    ...v.empty_dir.map((e) => ({ name: e.name, emptyDir: { ...(e.medium ? { medium: e.medium } : {}), ...(e.size_limit ? { sizeLimit: e.size_limit } : {}) } })),
    ...v.csi.map((c) => ({
      name: c.name,
      csi: { driver: c.driver, fsType: c.fs_type, readOnly: c.read_only, ...(Object.keys(c.volume_attributes).length > 0 ? { volumeAttributes: { ...c.volume_attributes } } : {}) },
    })),
    ...v.nfs.map((n) => ({ name: n.name, nfs: { server: n.server, path: n.path, ...(n.read_only ? { readOnly: true } : {}) } })),
  ];
}

export function userMounts(v: KubernetesVolumes, expand: Expand): V1VolumeMount[] {
  const mount = (m: { name: string; mount_path: string; sub_path?: string; read_only?: boolean; mount_propagation?: string }, name = m.name): V1VolumeMount => ({
    name,
    mountPath: expand(m.mount_path),
    ...(m.sub_path ? { subPath: expand(m.sub_path) } : {}),
    ...(m.read_only ? { readOnly: true } : {}),
    ...(m.mount_propagation ? { mountPropagation: m.mount_propagation } : {}),
  });
  return [
    ...v.host_path.map((m) => mount(m)),
    ...v.secret.map((m) => mount(m)),
    ...v.pvc.map((m) => mount(m, expand(m.name))),
    ...v.config_map.map((m) => mount(m)),
    // GitLab Runner mounts an emptyDir read-write always.
    ...v.empty_dir.map((m) => mount({ ...m, read_only: false })),
    ...v.csi.map((m) => mount(m)),
    ...v.nfs.map((m) => mount(m)),
  ];
}
