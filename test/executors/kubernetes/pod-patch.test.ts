/**
 * [[runners.kubernetes.pod_spec]] patches of the generated pod spec: strategic, merge and json, as
 * GitLab Runner 19 applies them (pure: a patch_path is a file read per job).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { V1PodSpec } from '@kubernetes/client-node';
import { patchPodSpec } from '../../../src/executors/kubernetes/pod-patch.js';
import type { PodSpecPatchOptions } from '../../../src/executors/kubernetes/options.js';
import { strategicMergePatch } from '../../../src/executors/kubernetes/strategic-merge-patch.js';

const spec = (): V1PodSpec => ({
  restartPolicy: 'Never',
  nodeSelector: { disk: 'hdd', zone: 'a' },
  containers: [
    { name: 'build', image: 'alpine:3', env: [{ name: 'A', value: '1' }], volumeMounts: [{ name: 'repo', mountPath: '/builds' }] },
    { name: 'svc-0', image: 'redis:7' },
  ],
  volumes: [{ name: 'repo', emptyDir: {} }],
  tolerations: [{ key: 'a', operator: 'Exists' }],
});

async function patched(patches: Array<Partial<PodSpecPatchOptions>>, base = spec()) {
  const warnings: string[] = [];
  const out = await patchPodSpec(base, patches.map((p, i) => ({ name: `p${i}`, patch_type: 'strategic', ...p })), (line) => warnings.push(line));
  return { out, warnings };
}

describe('pod_spec patches', () => {
  it('strategic: merges maps, containers by name, env by name, mounts by path; replaces plain lists; null removes', async () => {
    const { out } = await patched([
      {
        patch: `
nodeSelector: { zone: null, gpu: "true" }
containers:
  - name: build
    env: [{ name: B, value: "2" }]
    volumeMounts: [{ name: cache, mountPath: /cache }]
  - name: sidecar
    image: busybox
tolerations: [{ key: b, operator: Exists }]
hostname: ci
`,
      },
    ]);
    expect(out.nodeSelector).toEqual({ disk: 'hdd', gpu: 'true' });
    expect(out.containers.map((c) => c.name)).toEqual(['build', 'svc-0', 'sidecar']);
    expect(out.containers[0]!.env).toEqual([{ name: 'A', value: '1' }, { name: 'B', value: '2' }]);
    expect(out.containers[0]!.volumeMounts).toEqual([{ name: 'repo', mountPath: '/builds' }, { name: 'cache', mountPath: '/cache' }]);
    expect(out.containers[0]!.image).toBe('alpine:3');
    expect(out.tolerations).toEqual([{ key: 'b', operator: 'Exists' }]);
    expect(out.hostname).toBe('ci');
  });

  it('strategic: $patch delete removes an element, $patch replace replaces a list or a map, $retainKeys and $setElementOrder work', () => {
    const base = spec() as unknown as Record<string, unknown>;
    const json = JSON.parse(JSON.stringify(base)) as Record<string, unknown>;
    expect((strategicMergePatch(json, { containers: [{ name: 'svc-0', $patch: 'delete' }] }) as V1PodSpec).containers.map((c) => c.name)).toEqual(['build']);
    expect((strategicMergePatch(json, { volumes: [{ $patch: 'replace' }, { name: 'x', emptyDir: {} }] }) as V1PodSpec).volumes).toEqual([{ name: 'x', emptyDir: {} }]);
    expect((strategicMergePatch(json, { nodeSelector: { $patch: 'replace', only: 'this' } }) as V1PodSpec).nodeSelector).toEqual({ only: 'this' });
    expect((strategicMergePatch(json, { nodeSelector: { $retainKeys: ['disk'], extra: '1' } }) as V1PodSpec).nodeSelector).toEqual({ disk: 'hdd' });
    expect((strategicMergePatch(json, { containers: [{ name: 'new', image: 'x' }], '$setElementOrder/containers': [{ name: 'new' }, { name: 'build' }] }) as V1PodSpec).containers.map((c) => c.name)).toEqual(['new', 'build', 'svc-0']);
    expect(() => strategicMergePatch(json, { containers: [{ image: 'no name' }] })).toThrow('a list element without its merge key "name"');
  });

  it('merge (RFC 7386) replaces lists whole; json (RFC 6902) applies operations', async () => {
    const merge = await patched([{ patch_type: 'merge', patch: '{"containers": [{"name": "only", "image": "x"}], "nodeSelector": {"disk": null}}' }]);
    expect(merge.out.containers).toEqual([{ name: 'only', image: 'x' }]);
    expect(merge.out.nodeSelector).toEqual({ zone: 'a' });
    const json = await patched([{ patch_type: 'json', patch: '[{"op": "add", "path": "/containers/0/args", "value": ["-x"]}, {"op": "replace", "path": "/restartPolicy", "value": "Always"}]' }]);
    expect(json.out.containers[0]!.args).toEqual(['-x']);
    expect(json.out.restartPolicy).toBe('Always');
    await expect(patched([{ patch_type: 'json', patch: '[{"op": "test", "path": "/restartPolicy", "value": "Always"}]' }])).rejects.toThrow('pod_spec "p0": applying the json patch');
  });

  it('applies patches in order, reads patch_path for each job, and warns about fields the pod spec does not have', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pod-patch-'));
    const file = join(dir, 'patch.yaml');
    await writeFile(file, 'priorityClassName: from-file\nnotAField: 1\n');
    const { out, warnings } = await patched([{ patch: 'priorityClassName: first' }, { patch_path: file }]);
    expect(out.priorityClassName).toBe('from-file');
    expect(warnings).toEqual(['WARNING: pod_spec: spec.notAField is not a field of the Kubernetes pod spec; dropped']);
    await expect(patched([{ patch_path: join(dir, 'missing.yaml') }])).rejects.toThrow(`pod_spec "p0": loading patch file ${join(dir, 'missing.yaml')}`);
  });
});
