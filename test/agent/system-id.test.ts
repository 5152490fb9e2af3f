/** The host's system id: kept beside config.toml, derived from the machine id as GitLab Runner derives it, else random. */
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSystemId, SYSTEM_ID_FILE, uniqueSystemId } from '../../src/agent/config/system-id.js';

describe('the system id', () => {
  it('is s_ and 12 hex digits of the HMAC of "gitlab-runner" keyed with the machine id, so a host has the id GitLab Runner gives it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-system-id-'));
    const machineId = join(dir, 'machine-id');
    await writeFile(machineId, '3d1219c7a1b2c3d4e5f60718293a4b5c\n');
    const expected = `s_${createHmac('sha256', '3d1219c7a1b2c3d4e5f60718293a4b5c').update('gitlab-runner').digest('hex').slice(0, 12)}`;
    expect(await uniqueSystemId([machineId])).toBe(expected);

    const loaded = await loadSystemId(join(dir, 'config.toml'), [machineId]);
    expect(loaded).toEqual({ id: expected, path: join(dir, SYSTEM_ID_FILE) });
    expect(await readFile(join(dir, SYSTEM_ID_FILE), 'utf8')).toBe(`${expected}\n`);
  });

  it('is random (r_ and 12 letters and digits) without a machine id, and a kept one is read back as it is', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ci-runner-system-id-'));
    const first = await uniqueSystemId([join(dir, 'none')]);
    expect(first).toMatch(/^r_[0-9a-zA-Z]{12}$/);
    expect(await uniqueSystemId([join(dir, 'none')])).not.toBe(first);
    await writeFile(join(dir, SYSTEM_ID_FILE), 'r_abcdefABCDEF\n');
    expect((await loadSystemId(join(dir, 'config.toml'), [join(dir, 'none')])).id).toBe('r_abcdefABCDEF');
  });
});
