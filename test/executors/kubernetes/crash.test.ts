/**
 * A daemon with a kubernetes entry SIGKILLed mid-job: started again, it reports the job failed and
 * removes the pod and the secret its earlier life left in the cluster.
 */
import { logText } from '../../helpers/log-text.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startDaemon } from '../../cli/daemon.js';
import { waitUntil, workDirs } from '../../cli/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { cluster, K8S_IMAGES, labelled, skipKubernetes } from './cluster.js';
import { useKubernetesTestServer, useNamespace } from './jobs.js';

let t: TestServer;
useKubernetesTestServer((server) => {
  t = server;
});

const namespace = await useNamespace('ci-runner-test-crash');

describe.skipIf(skipKubernetes)('daemon with a kubernetes entry', () => {
  it('removes what a SIGKILLed daemon left in the cluster when it starts again, and reports the job', async () => {
    const d = await workDirs();
    const { token } = await t.registerRunner();
    const config = join(d.root, 'config.toml');
    await writeFile(config, [
      'concurrent = 1', 'check_interval = 1', 'log_format = "json"', '',
      '[[runners]]', '  name = "crash"', `  url = "${t.url}"`, `  token = "${token}"`, '  executor = "kubernetes"', `  builds_dir = "${d.builds}"`,
      '  [runners.kubernetes]', `    host = "${cluster!.api}"`, `    bearer_token = "${cluster!.token}"`, `    ca_file = "${cluster!.caFile}"`,
      `    namespace = "${namespace}"`, `    image = "${K8S_IMAGES.sh}"`, '    pull_policy = "if-not-present"', '',
    ].join('\n'), { mode: 0o600 });
    const p = await t.pipeline(`j:\n  services:\n    - ${K8S_IMAGES.httpd}\n  script:\n    - echo "script $((6 * 7))"\n    - sleep 300\n`);
    const id = p.jobs[0]!.id;
    const first = startDaemon(config);
    await waitUntil(async () => logText(await t.server.getTrace(id)).includes('script 42'), 60_000, 'the job to start');
    first.child.kill('SIGKILL');
    await first.child;
    const left = await labelled(cluster!.core, namespace, token, id);
    expect(left.pods).toHaveLength(1);
    expect(left.secrets).toHaveLength(1);

    const second = startDaemon(config);
    try {
      await t.waitForJob(id, (j) => j.status === 'failed', 60_000);
      await waitUntil(async () => {
        const now = await labelled(cluster!.core, namespace, token, id);
        return now.undeleted.length === 0 && now.secrets.length === 0;
      }, 60_000, 'the leftovers to be removed');
    } finally {
      await second.stop();
    }
    expect(second.output()).toContain('removed pods, secrets and job namespaces left by an earlier run');
  }, 180_000);
});
