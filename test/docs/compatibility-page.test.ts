/**
 * docs/compatibility.md is generated from the code's compatibility tables (scripts/compat/): the
 * committed page must be what the tables say today, so it cannot tell an operator something the
 * code no longer does.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { renderCompatibilityPage } from '../../scripts/compat/render.js';

const committed = async (): Promise<string> => readFile(new URL('../../docs/compatibility.md', import.meta.url), 'utf8').catch(() => '');

describe('docs/compatibility.md', () => {
  it('is what the compatibility tables say (else: run npm run docs:compat)', async () => {
    const page = await renderCompatibilityPage();
    expect(page === (await committed()), 'docs/compatibility.md differs from the tables: run npm run docs:compat and commit it').toBe(true);
  });

  it('lists every surface with its counts, and GitLab Runner names with their status and reason', async () => {
    const page = await renderCompatibilityPage();
    for (const surface of ['config.toml keys', 'Commands', 'Command-line flags and their environment names', 'Control variables', 'Feature flags', 'info.features', 'Job stages', 'Prometheus metrics', '.gitlab-ci.yml keywords']) {
      expect(page).toMatch(new RegExp(`^\\| \\[${surface.replace(/[.()]/g, '\\$&')}[^|]*\\]\\(#[^)]+\\) \\| \\d+ \\| \\d+ \\| \\d+ \\|$`, 'm'));
    }
    // One name of each kind, as the code treats it.
    expect(page).toMatch(/^\| `runners.docker.volumes` \| GitLab Runner 19 \| honoured/m);
    expect(page).toMatch(/^\| `session_server` \| GitLab Runner 19 \| \*\*warned\*\*: ci-runner has no interactive web terminal/m);
    expect(page).toMatch(/^\| `--ssh-host` \|  \| SSH_HOST \| .* \| \*\*refused\*\*: the ssh executor is not available in ci-runner/m);
    expect(page).toMatch(/^\| `--kubernetes-helper-image` \|  \| KUBERNETES_HELPER_IMAGE \| .* \| \*\*warned\*\*: /m);
    // A flag that writes a config key has the key's status.
    expect(page).toMatch(/^\| `--cache-s3-role-arn` \|  \| CACHE_S3_ROLE_ARN \| .* \| \*\*warned\*\*: ci-runner does not assume an AWS role/m);
    expect(page).toMatch(/^\| `cache-init` \| GitLab Runner \|  \| \*\*refused\*\*: exit 2/m);
    expect(page).toMatch(/^\| `GIT_STRATEGY` \| .* \| honoured \|$/m);
    expect(page).toMatch(/^\| `FF_SCRIPT_SECTIONS` \| false \|  \| honoured: /m);
    expect(page).toMatch(/^\| `vault_secrets` \| none \| \*\*warned\*\*: /m);
    expect(page).toMatch(/^\| `get_sources` \| Getting source from Git repository \| host \| `GET_SOURCES_ATTEMPTS` \|/m);
    expect(page).toMatch(/^\| `gitlab_runner_jobs` \| gauge \| /m);
    expect(page).toMatch(/^\| `<job>:secrets` \| \*\*warned\*\*: /m);
  });
});
