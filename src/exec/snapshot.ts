/**
 * The working tree as it is, as a commit the reference server can serve, without touching the user's
 * repository. `git add -A`, `write-tree` and `commit-tree` run with the snapshot repository (a bare
 * one in `dir`: its own config, an object directory whose alternates point at the repository's
 * objects, one ref) as their git dir, the working tree as theirs, and a temporary index (a copy of the
 * user's, so unchanged files are not hashed again): they write only there. Nothing is written to the
 * repository's `.git`, its index, refs, reflogs or stash, nor to the working tree.
 *
 * Nothing the repository's `.git` names runs either: every git here gets HOST_GIT_SETTINGS (no hooks,
 * no fsmonitor), and `git add`, the one step that would run filters, reads the snapshot repository's
 * config, which holds only the repository's settings that change what a file's content is
 * (ADD_SETTINGS), so filters and drivers come from the user's global and system config alone. Its
 * excludes and attributes files are copied over.
 */
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gitBatch, required, SnapshotError, succeeded, type BatchResult } from './snapshot-git.js';

export { SnapshotError } from './snapshot-git.js';

export interface Snapshot {
  /** The bare repository to serve (objects of the snapshot, the user's objects as alternates). */
  repoPath: string;
  /** The working tree's top level. */
  topLevel: string;
  /** The commit the pipeline runs: HEAD itself when the tree is clean, else a new commit on top of it. */
  sha: string;
  /** The branch (or tag, see `tag`) name the commit is under in `repoPath`. */
  ref: string;
  tag: boolean;
  /** True when the working tree differs from HEAD (uncommitted or untracked files). */
  dirty: boolean;
  /** HEAD's commit; undefined in a repository without commits. */
  head: string | undefined;
  /** The commit before `sha` (`CI_COMMIT_BEFORE_SHA`): its first parent, or 40 zeros. */
  beforeSha: string;
  /** `sha`'s commit message. */
  message: string;
  /** Set when HEAD is detached and no ref was asked for: the branch name used instead. */
  detachedAs?: string;
  /**
   * The project's default branch (`CI_DEFAULT_BRANCH`) as far as the clone knows it: what `origin/HEAD`
   * names, else git's `init.defaultBranch`, else `main`.
   */
  defaultBranch: string;
}

export interface SnapshotOptions {
  /** Branch name to run as (default: the current branch); `refs/tags/NAME` runs as tag NAME. */
  ref?: string;
  signal?: AbortSignal;
}

const ZERO_SHA = '0'.repeat(40);

/**
 * The repository's own settings the snapshot repository keeps: what `git add` needs to read the working
 * tree as the user's git does (line endings, modes, case, excludes and attributes files, the object
 * format). None of them names a program.
 */
const ADD_SETTINGS = /^(core\.(autocrlf|eol|safecrlf|filemode|symlinks|ignorecase|precomposeunicode|checkroundtripencoding|excludesfile|attributesfile|bigfilethreshold)|extensions\.objectformat)$/;

/** Where things are, as absolute paths: the working tree's top level and the parts of its git dir the snapshot reads. */
interface Located {
  topLevel: string;
  gitDir: string;
  objects: string;
  index: string;
  exclude: string;
  attributes: string;
}

/** What the snapshot asks the user's repository, in one batch (`refName` only for `--ref`). */
function questions(ref: string | undefined) {
  const paths = ['objects', 'index', 'info/exclude', 'info/attributes'].flatMap((path) => ['--git-path', path]);
  return {
    where: ['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-dir', ...paths],
    // The current branch; fails when HEAD is detached.
    branch: ['symbolic-ref', '--quiet', 'HEAD'],
    // `--` ends the revisions; without it git would also try them as paths. Fails before the first commit.
    head: ['rev-parse', '--quiet', 'HEAD^{commit}', 'HEAD^{tree}', '--'],
    // The remote's default branch, as `clone` (or `remote set-head`) recorded it.
    originHead: ['symbolic-ref', '--quiet', 'refs/remotes/origin/HEAD'],
    // HEAD's parents and message: the pipeline's CI_COMMIT_BEFORE_SHA and CI_COMMIT_MESSAGE when the tree is clean.
    log: ['log', '-1', '--format=%P%x00%B', 'HEAD', '--'],
    // The author and committer of a snapshot commit, and git's `init.defaultBranch`.
    identity: ['config', '--get-regexp', '^(user\\.(name|email)|init\\.defaultbranch)$'],
    // --local reads .git/config alone, without following its includes.
    addSettings: ['config', '--local', '--null', '--get-regexp', ADD_SETTINGS.source],
    refName: ref === undefined ? undefined : ['check-ref-format', ref.startsWith('refs/tags/') ? ref : `refs/heads/${ref}`],
  };
}

type Answers = BatchResult<keyof ReturnType<typeof questions>>;

function located(batch: Answers, cwd: string): Located {
  const out = succeeded(batch, 'where');
  if (out === undefined) {
    // git's own words matter here: "dubious ownership" needs safe.directory, not another directory.
    const said = batch.stderr.trim().split('\n')[0] ?? '';
    throw new SnapshotError(`${cwd} is not in a git working tree${said ? ` (git: ${said})` : ''}; run exec inside a clone of your project (or pass --cwd DIR)`);
  }
  const [topLevel, gitDir, objects, index, exclude, attributes] = out.split('\n');
  if (!topLevel || !gitDir || !objects || !index || !exclude || !attributes) throw new SnapshotError(`git rev-parse gave no working tree for ${cwd} (a bare repository?); run exec inside a working tree`);
  return { topLevel, gitDir, objects, index, exclude, attributes };
}

interface HeadState {
  /** Undefined when HEAD is detached. */
  branch?: string;
  /** HEAD's commit and tree; undefined before the first commit. */
  commit?: string;
  tree?: string;
  originHead?: string;
  parent?: string;
  message?: string;
}

function headState(batch: Answers): HeadState {
  const [symbolic, revs, origin, log] = [succeeded(batch, 'branch'), succeeded(batch, 'head'), succeeded(batch, 'originHead'), succeeded(batch, 'log')];
  const [commit, tree] = (revs?.split('\n') ?? []).filter((line) => /^[0-9a-f]{40,64}$/.test(line));
  return {
    ...(symbolic?.startsWith('refs/heads/') ? { branch: symbolic.slice('refs/heads/'.length) } : {}),
    ...(commit && tree ? { commit, tree } : {}),
    ...(origin?.startsWith('refs/remotes/origin/') ? { originHead: origin.slice('refs/remotes/origin/'.length) } : {}),
    ...(log === undefined ? {} : { parent: log.split('\0')[0]?.split(' ')[0] ?? '', message: log.slice(log.indexOf('\0') + 1).replace(/\n+$/, '') }),
  };
}

/** The author and committer of a snapshot commit (the user's git identity, else ci-runner's), and git's `init.defaultBranch`. */
function identity(batch: Answers): { env: Record<string, string>; initBranch?: string } {
  const out = succeeded(batch, 'identity') ?? '';
  const value = (key: string): string | undefined => out.split('\n').find((line) => line.startsWith(`${key} `))?.slice(key.length + 1);
  const name = value('user.name') || 'ci-runner exec';
  const email = value('user.email') || 'exec@ci-runner.invalid';
  const initBranch = value('init.defaultbranch');
  return { env: { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email }, ...(initBranch ? { initBranch } : {}) };
}

/** The repository's own ADD_SETTINGS, as config file lines. */
function addSettings(batch: Answers): string[] {
  const out = succeeded(batch, 'addSettings') ?? '';
  return out.split('\0').flatMap((record) => {
    const [key = '', value = ''] = record.split('\n');
    const [section, name] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1)];
    return ADD_SETTINGS.test(key) && !/[\n\r"\\]/.test(value) ? [`[${section}]`, `\t${name} = "${value}"`] : [];
  });
}

function checkRefName(batch: Answers, ref: string | undefined): void {
  if (ref === undefined) return;
  if (ref.startsWith('refs/heads/') || succeeded(batch, 'refName') === undefined) {
    throw new SnapshotError(`--ref ${ref}: not a valid branch name (or refs/tags/NAME for a tag)`);
  }
}

/**
 * A bare repository in `path` whose objects are looked up in the user's too, with `settings` (the
 * repository's ADD_SETTINGS) and copies of its excludes and attributes files.
 */
async function initSnapshotRepo(path: string, at: Located, settings: string[]): Promise<void> {
  // Written directly: a few files are all a bare repository is, and a `git init` would cost a process.
  await mkdir(join(path, 'objects', 'info'), { recursive: true });
  await mkdir(join(path, 'refs', 'heads'), { recursive: true });
  await mkdir(join(path, 'refs', 'tags'), { recursive: true });
  await mkdir(join(path, 'info'), { recursive: true });
  const sha256 = settings.some((line) => /objectformat = "sha256"/i.test(line));
  await writeFile(join(path, 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(join(path, 'config'), ['[core]', `\trepositoryformatversion = ${sha256 ? 1 : 0}`, '\tbare = true', ...settings, ''].join('\n'));
  await writeFile(join(path, 'objects', 'info', 'alternates'), `${at.objects}\n`);
  await Promise.all([[at.exclude, 'exclude'], [at.attributes, 'attributes']].map(([from = '', name = '']) => copyFile(from, join(path, 'info', name)).catch(() => undefined)));
  // A split index names its shared part, which git looks for in the git dir.
  const shared = (await readdir(at.gitDir).catch(() => [] as string[])).filter((name) => name.startsWith('sharedindex.'));
  await Promise.all(shared.map((name) => copyFile(join(at.gitDir, name), join(path, name))));
}

/**
 * Snapshots the working tree around `cwd` into a bare repository at `dir/repo.git` (`dir` must be
 * empty or missing and is the caller's to remove). Throws `SnapshotError` outside a git working tree.
 */
export async function snapshotWorkingTree(cwd: string, dir: string, options: SnapshotOptions = {}): Promise<Snapshot> {
  const { signal } = options;
  const asked = await gitBatch(cwd, questions(options.ref), signal ? { signal } : {});
  const at = located(asked, cwd);
  checkRefName(asked, options.ref);
  const [head, who, settings] = [headState(asked), identity(asked), addSettings(asked)];
  const { topLevel } = at;
  const repoPath = join(dir, 'repo.git');
  await initSnapshotRepo(repoPath, at, settings);

  const env = {
    GIT_DIR: repoPath,
    GIT_WORK_TREE: topLevel,
    GIT_INDEX_FILE: join(dir, 'index'),
    ...who.env,
  };
  // A copy of the user's index carries the files' stat data: `add -A` only hashes what changed.
  await copyFile(at.index, env.GIT_INDEX_FILE).catch(() => undefined);
  const written = await gitBatch(topLevel, { add: ['add', '--all', '--', '.'], tree: ['write-tree'] }, { env, stopAtFailure: true, ...(signal ? { signal } : {}) });
  required(written, 'add', topLevel);
  const tree = required(written, 'tree', topLevel);
  const dirty = tree !== head.tree;
  let sha = head.commit;
  let beforeSha = head.parent || ZERO_SHA;
  let message = head.message ?? '';
  if (dirty || sha === undefined) {
    message = head.commit === undefined ? 'ci-runner exec: working tree' : 'ci-runner exec: working tree with uncommitted changes';
    const committed = await gitBatch(topLevel, { commit: ['commit-tree', tree, ...(head.commit ? ['-p', head.commit] : []), '-m', message] }, { env, ...(signal ? { signal } : {}) });
    sha = required(committed, 'commit', topLevel);
    beforeSha = head.commit ?? ZERO_SHA;
  }

  const wanted = options.ref ?? head.branch;
  const detachedAs = wanted === undefined ? 'main' : undefined;
  const ref = wanted ?? 'main';
  const tag = ref.startsWith('refs/tags/');
  const name = tag ? ref.slice('refs/tags/'.length) : ref;
  const refFile = join(repoPath, tag ? 'refs/tags' : 'refs/heads', name);
  await mkdir(dirname(refFile), { recursive: true });
  await writeFile(refFile, `${sha}\n`);
  await writeFile(join(repoPath, 'HEAD'), `ref: ${tag ? ref : `refs/heads/${name}`}\n`);
  const defaultBranch = head.originHead ?? who.initBranch ?? 'main';
  return { repoPath, topLevel, sha, ref: name, tag, dirty, head: head.commit, beforeSha, message, defaultBranch, ...(detachedAs ? { detachedAs } : {}) };
}
