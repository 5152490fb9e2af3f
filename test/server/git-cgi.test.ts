import { describe, expect, it } from 'vitest';
import { parseCgiHead } from '../../src/server/git/cgi.js';
import { routeGitPath } from '../../src/server/git/route.js';

describe('parseCgiHead', () => {
  it('reads Status and headers and keeps the body bytes that came with them', () => {
    const head = parseCgiHead(Buffer.from('Status: 403 Forbidden\r\nContent-Type: text/plain\r\nX-A: 1\r\n\r\nbody'));
    expect(head).toEqual({ status: 403, headers: [['Content-Type', 'text/plain'], ['X-A', '1']], rest: Buffer.from('body') });
  });

  it('defaults to 200 and accepts bare LF line ends', () => {
    const head = parseCgiHead(Buffer.from('Content-Type: a/b\n\n\r\n\r\nrest'));
    expect(head?.status).toBe(200);
    expect(head?.rest.toString()).toBe('\r\n\r\nrest');
  });

  it('waits for the blank line that ends the head', () => {
    expect(parseCgiHead(Buffer.from('Content-Type: a/b\r\n'))).toBeUndefined();
  });
});

describe('routeGitPath', () => {
  it('recognises the three smart HTTP endpoints of a project', () => {
    expect(routeGitPath('/group/app.git/info/refs')).toEqual({ kind: 'git', project: 'group/app', endpoint: 'info/refs' });
    expect(routeGitPath('/group/app.git/git-upload-pack')).toEqual({ kind: 'git', project: 'group/app', endpoint: 'git-upload-pack' });
    expect(routeGitPath('/g/my.app.git/git-receive-pack')).toEqual({ kind: 'git', project: 'g/my.app', endpoint: 'git-receive-pack' });
  });

  it('recognises Git LFS\'s batch API and objects by their SHA-256 name only', () => {
    const oid = 'a'.repeat(64);
    expect(routeGitPath('/group/app.git/info/lfs/objects/batch')).toEqual({ kind: 'lfs', project: 'group/app' });
    expect(routeGitPath(`/group/app.git/info/lfs/objects/${oid}`)).toEqual({ kind: 'lfs', project: 'group/app', oid });
    for (const path of ['/group/app.git/info/lfs/objects/../../config', `/group/app.git/info/lfs/objects/${oid}/x`, '/group/app.git/info/lfs/objects/ABC', '/group/app.git/info/lfs/locks']) {
      expect(routeGitPath(path), path).toEqual({ kind: 'not-found' });
    }
  });

  it('claims other paths under a project as not found, never as files', () => {
    for (const path of ['/g/a.git', '/g/a.git/HEAD', '/g/a.git/objects/pack/x.pack', '/g/a.git/info/refs/../../x', '/g/..%2Fx.git/info/refs', '/../a.git/info/refs', '/g/a..git/info/refs']) {
      expect(routeGitPath(path), path).toEqual({ kind: 'not-found' });
    }
  });

  it('leaves everything else to the caller', () => {
    for (const path of ['/', '/ci/api/v1/builds/register.json', '/admin/api/jobs/1', '/a.git/info/refs', '/g/a/info/refs', '/g/%E0%A4%A.git/info/refs']) {
      expect(routeGitPath(path), path).toEqual({ kind: 'other' });
    }
  });
});
