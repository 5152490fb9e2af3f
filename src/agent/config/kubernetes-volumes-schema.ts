/**
 * `[runners.kubernetes.volumes]`: GitLab Runner 19's seven kinds of volume with their keys, as zod
 * schemas and their key tables (keys.ts). Mount paths and sub paths may hold `$VARIABLES` of the job,
 * as may a PVC's name (expanded per job, executors/kubernetes/volumes.ts).
 */
import { z } from 'zod';
import { dnsLabel, optString, quantity, readTable, stringMap } from './kubernetes-keys.js';

const mountPath = z.string().regex(/^[/$]/, 'an absolute path (or one that starts with a $VARIABLE)');
const propagation = z
  .union([z.literal(''), z.enum(['None', 'HostToContainer', 'Bidirectional'])], { error: 'None, HostToContainer or Bidirectional' })
  .optional()
  .transform((v) => v || undefined);
const readOnly = z.boolean().default(false);

const base = { name: dnsLabel, mount_path: mountPath, sub_path: optString };

const hostPath = z.strictObject({ ...base, host_path: z.string().regex(/^\//, 'an absolute path').or(z.literal('')).optional().transform((v) => v || undefined), read_only: readOnly, mount_propagation: propagation });
const pvc = z.strictObject({
  ...base,
  name: z.string().regex(/^(?:[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?|.*\$.*)$/, 'a DNS-1123 label (or one made of $VARIABLES)'),
  read_only: readOnly,
  mount_propagation: propagation,
});
const keyed = z.strictObject({ ...base, read_only: readOnly, items: stringMap });
const emptyDir = z.strictObject({ ...base, medium: z.enum(['', 'Memory']).optional().transform((v) => v || undefined), size_limit: quantity, mount_propagation: propagation });
const csi = z.strictObject({ ...base, driver: z.string().min(1), fs_type: z.string().default(''), read_only: readOnly, volume_attributes: stringMap });
const nfs = z.strictObject({ ...base, server: z.string().min(1), path: z.string().min(1), read_only: readOnly });

const volumesObject = z.strictObject({
  host_path: z.array(hostPath).default([]),
  pvc: z.array(pvc).default([]),
  config_map: z.array(keyed).default([]),
  secret: z.array(keyed).default([]),
  empty_dir: z.array(emptyDir).default([]),
  csi: z.array(csi).default([]),
  nfs: z.array(nfs).default([]),
});

export const volumes = volumesObject.prefault({});

export const VOLUMES_KEYS = readTable(volumesObject, {
  host_path: readTable(hostPath),
  pvc: readTable(pvc),
  config_map: readTable(keyed),
  secret: readTable(keyed),
  empty_dir: readTable(emptyDir),
  csi: readTable(csi),
  nfs: readTable(nfs),
});
