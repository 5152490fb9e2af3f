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
import { runCommand } from '../util/command.js';
import { CiRunnerError } from '../util/errors.js';
import { gitSettingsEnv, HOST_GIT_SETTINGS } from '../git/host-config.js';

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

/** A directory that is not a git working tree, or a git step that failed: exit 2 (usage). */
export class SnapshotError extends CiRunnerError {
  readonly exitCode = 2;

  constructor(message: string, options?: { cause?: unknown }) {
    super('EXEC_SNAPSHOT_FAILED', message, options);
  }
}

/** A git command that failed; `stderr` is what git said. */
class GitCommandError extends SnapshotError {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
  }
}

const ZERO_SHA = '0'.repeat(40);

/** Settings that keep git from writing anywhere but the temp dir, whatever the user's config says. */
const QUIET_CONFIG = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', '-c', 'commit.gpgsign=false'];

/**
 * The repository's own settings the snapshot repository keeps: what `git add` needs to read the working
 * tree as the user's git does (line endings, modes, case, excludes and attributes files, the object
 * format). None of them names a program.
 */
const ADD_SETTINGS = /^(core\.(autocrlf|eol|safecrlf|filemode|symlinks|ignorecase|precomposeunicode|checkroundtripencoding|excludesfile|attributesfile|bigfilethreshold)|extensions\.objectformat)$/;

/** `git` output and exit status; rejects when git cannot be started or `signal` aborted it. */
async function runGit(cwd: string, args: string[], env: Record<string, string>, signal?: AbortSignal): Promise<{ code: number; stdout: string; stderr: string }> {
  const result = await runCommand('git', args, { cwd, env, ...(signal ? { signal } : {}) });
  if (signal?.aborted) throw signal.reason;
  if (result.exitCode === undefined) {
    throw new SnapshotError(`cannot run git: ${result.originalMessage ?? result.shortMessage}; is git installed?`, { cause: result });
  }
  return { code: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

async function git(cwd: string, args: string[], options: { env?: Record<string, string>; signal?: AbortSignal; allowFail?: boolean } = {}): Promise<string | undefined> {
  // GIT_OPTIONAL_LOCKS=0: no opportunistic index refresh in the user's repository.
  const env = { ...gitSettingsEnv(HOST_GIT_SETTINGS), GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0', ...options.env };
  const result = await runGit(cwd, [...QUIET_CONFIG, ...args], env, options.signal);
  options.signal?.throwIfAborted();
  if (result.code === 0) return result.stdout.trim();
  if (options.allowFail) return undefined;
  const said = result.stderr.trim();
  throw new GitCommandError(`git ${args.join(' ')} failed in ${cwd}: ${said || `exit ${String(result.code)}`}`, said);
}

/** Where things are, as absolute paths: the working tree's top level and the parts of its git dir the snapshot reads. */
interface Located {
  topLevel: string;
  gitDir: string;
  objects: string;
  index: string;
  exclude: string;
  attributes: string;
}

async function locate(cwd: string, signal?: AbortSignal): Promise<Located> {
  let out: string | undefined;
  try {
    const paths = ['objects', 'index', 'info/exclude', 'info/attributes'].flatMap((path) => ['--git-path', path]);
    out = await git(cwd, ['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-dir', ...paths], { signal });
  } catch (error) {
    // A git that cannot start, or an abort, says so itself.
    if (!(error instanceof GitCommandError)) throw error;
    // git's own words matter here: "dubious ownership" needs safe.directory, not another directory.
    const said = error.stderr.split('\n')[0] ?? '';
    throw new SnapshotError(`${cwd} is not in a git working tree${said ? ` (git: ${said})` : ''}; run exec inside a clone of your project (or pass --cwd DIR)`, { cause: error });
  }
  const [topLevel, gitDir, objects, index, exclude, attributes] = out?.split('\n') ?? [];
  if (!topLevel || !gitDir || !objects || !index || !exclude || !attributes) throw new SnapshotError(`git rev-parse gave no working tree for ${cwd} (a bare repository?); run exec inside a working tree`);
  return { topLevel, gitDir, objects, index, exclude, attributes };
}

/** The repository's own ADD_SETTINGS, as config file lines. */
async function addSettings(cwd: string, signal?: AbortSignal): Promise<string[]> {
  // --local reads .git/config alone, without following its includes.
  const out = (await git(cwd, ['config', '--local', '--null', '--get-regexp', ADD_SETTINGS.source], { signal, allowFail: true })) ?? '';
  return out.split('\0').flatMap((record) => {
    const [key = '', value = ''] = record.split('\n');
    const [section, name] = [key.slice(0, key.lastIndexOf('.')), key.slice(key.lastIndexOf('.') + 1)];
    return ADD_SETTINGS.test(key) && !/[\n\r"\\]/.test(value) ? [`[${section}]`, `\t${name} = "${value}"`] : [];
  });
}

/**
 * The current branch (undefined when detached) and HEAD's commit and tree (undefined before the first
 * commit). Asked from anywhere in the working tree, so it runs alongside `locate`.
 */
async function headState(cwd: string, signal?: AbortSignal): Promise<{ branch?: string; commit?: string; tree?: string; originHead?: string; parent?: string; message?: string }> {
  const [symbolic, revs, origin, log] = await Promise.all([
    git(cwd, ['symbolic-ref', '--quiet', 'HEAD'], { signal, allowFail: true }),
    // `--` ends the revisions; without it git would also try them as paths. Fails before the first commit.
    git(cwd, ['rev-parse', '--quiet', 'HEAD^{commit}', 'HEAD^{tree}', '--'], { signal, allowFail: true }),
    // The remote's default branch, as `clone` (or `remote set-head`) recorded it.
    git(cwd, ['symbolic-ref', '--quiet', 'refs/remotes/origin/HEAD'], { signal, allowFail: true }),
    // HEAD's parents and message: the pipeline's CI_COMMIT_BEFORE_SHA and CI_COMMIT_MESSAGE when the tree is clean.
    git(cwd, ['log', '-1', '--format=%P%x00%B', 'HEAD', '--'], { signal, allowFail: true }),
  ]);
  const [commit, tree] = (revs?.split('\n') ?? []).filter((line) => /^[0-9a-f]{40,64}$/.test(line));
  return {
    ...(symbolic?.startsWith('refs/heads/') ? { branch: symbolic.slice('refs/heads/'.length) } : {}),
    ...(commit && tree ? { commit, tree } : {}),
    ...(origin?.startsWith('refs/remotes/origin/') ? { originHead: origin.slice('refs/remotes/origin/'.length) } : {}),
    ...(log === undefined ? {} : { parent: log.split('\0')[0]?.split(' ')[0] ?? '', message: log.slice(log.indexOf('\0') + 1).replace(/\n+$/, '') }),
  };
}

/**
 * The author and committer of a snapshot commit (the user's git identity, else ci-runner's), and
 * git's `init.defaultBranch`, read with the same git.
 */
async function identity(topLevel: string, signal?: AbortSignal): Promise<{ env: Record<string, string>; initBranch?: string }> {
  const out = (await git(topLevel, ['config', '--get-regexp', '^(user\\.(name|email)|init\\.defaultbranch)$'], { signal, allowFail: true })) ?? '';
  const value = (key: string): string | undefined => out.split('\n').find((line) => line.startsWith(`${key} `))?.slice(key.length + 1);
  const name = value('user.name') || 'ci-runner exec';
  const email = value('user.email') || 'exec@ci-runner.invalid';
  const initBranch = value('init.defaultbranch');
  return { env: { GIT_AUTHOR_NAME: name, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: name, GIT_COMMITTER_EMAIL: email }, ...(initBranch ? { initBranch } : {}) };
}

async function checkRefName(topLevel: string, ref: string, signal?: AbortSignal): Promise<void> {
  const name = ref.startsWith('refs/tags/') ? ref : `refs/heads/${ref}`;
  if (ref.startsWith('refs/heads/') || (await git(topLevel, ['check-ref-format', name], { signal, allowFail: true })) === undefined) {
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
  // Independent questions, asked at once: each git process costs start-up time.
  const [at, head, who, settings] = await Promise.all([
    locate(cwd, signal),
    headState(cwd, signal),
    identity(cwd, signal),
    addSettings(cwd, signal),
    options.ref === undefined ? undefined : checkRefName(cwd, options.ref, signal),
  ]);
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
  await git(topLevel, ['add', '--all', '--', '.'], { env, signal });
  const tree = await git(topLevel, ['write-tree'], { env, signal });
  if (!tree) throw new SnapshotError('git write-tree printed no tree');
  const dirty = tree !== head.tree;
  let sha = head.commit;
  let beforeSha = head.parent || ZERO_SHA;
  let message = head.message ?? '';
  if (dirty || sha === undefined) {
    message = head.commit === undefined ? 'ci-runner exec: working tree' : 'ci-runner exec: working tree with uncommitted changes';
    sha = await git(topLevel, ['commit-tree', tree, ...(head.commit ? ['-p', head.commit] : []), '-m', message], { env, signal });
    if (!sha) throw new SnapshotError('git commit-tree printed no commit');
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
