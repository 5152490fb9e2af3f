/**
 * Every keyword of GitLab's CI schema (`app/assets/javascripts/editor/schema/ci.json` in GitLab, and the
 * keys its config entries accept), with what this engine does with it: `honoured` (it does here what it
 * does on GitLab, `note` saying how where that is not obvious), `warned` (accepted and listed once per
 * pipeline as "not applied locally", with the reason), `refused` (the file is refused with the reason).
 * A key missing from its table is not GitLab's: the file is refused as GitLab refuses it ("config
 * contains unknown keys"). The readers check keys against these tables (`checkKeys`), and
 * `keyword-notes.ts` walks a pipeline through them to list what is not applied.
 */
import { honoured, refused, warned, type Support } from '../util/compat.js';

export interface Keyword {
  readonly support: Support;
  /** The keys of its value, when that is a map (or a list of maps) with keys of its own. */
  readonly keys?: KeywordTable;
}

export type KeywordTable = Readonly<Record<string, Keyword>>;

const on = (support: Support, keys?: KeywordTable): Keyword => (keys === undefined ? { support } : { support, keys });
const yes = (note?: string, keys?: KeywordTable): Keyword => on(honoured(note), keys);
const not = (reason: string, keys?: KeywordTable): Keyword => on(warned(reason), keys);

const MR_WIDGET = 'shown in merge requests and security dashboards on GitLab; here the report is kept with the artifacts and listed';
/** A report that is kept with the job's files and listed (`server/state/reports.ts`). */
const kept = yes(MR_WIDGET);

/** `artifacts:reports` — every report type GitLab takes (its `Entry::Reports` and the schema). */
export const REPORT_KEYWORDS: KeywordTable = {
  junit: yes('parsed: passed, failed and skipped tests per job (exec prints them, the web page shows them)'),
  dotenv: yes('its variables go to the jobs that take this job\'s artifacts'),
  coverage_report: yes('kept and listed (cobertura or jacoco)', { coverage_format: yes(), path: yes() }),
  accessibility: kept,
  annotations: kept,
  api_fuzzing: kept,
  browser_performance: kept,
  cluster_image_scanning: kept,
  codequality: kept,
  container_scanning: kept,
  coverage_fuzzing: kept,
  cyclonedx: kept,
  dast: kept,
  dependency_scanning: kept,
  license_management: kept,
  license_scanning: kept,
  load_performance: kept,
  lsif: kept,
  metrics: kept,
  performance: kept,
  repository_xray: kept,
  requirements: kept,
  requirements_v2: kept,
  sast: kept,
  secret_detection: kept,
  terraform: kept,
};

export const ARTIFACTS_KEYWORDS: KeywordTable = {
  paths: yes(),
  exclude: yes(),
  name: yes(),
  untracked: yes(),
  when: yes(),
  expire_in: yes(),
  reports: yes(undefined, REPORT_KEYWORDS),
  expose_as: not('a link in merge requests on GitLab; here the artifacts are kept in the run\'s state dir'),
  access: not('who may download the artifacts on GitLab; a local run keeps them for you alone'),
};

/** `docker:` / `kubernetes:` executor options of an image or a service (read in parse-image-options.ts). */
const DOCKER_OPTIONS = yes('sent to the runner as executor_opts: the docker executor runs the container as `user`, for `platform`', { user: yes(), platform: yes() });
const KUBERNETES_OPTIONS = yes('sent to the runner as executor_opts: the kubernetes executor runs the container as `user`', { user: yes() });

export const IMAGE_KEYWORDS: KeywordTable = {
  name: yes(),
  entrypoint: yes(),
  pull_policy: yes(),
  docker: DOCKER_OPTIONS,
  kubernetes: KUBERNETES_OPTIONS,
};

export const SERVICE_KEYWORDS: KeywordTable = {
  ...IMAGE_KEYWORDS,
  alias: yes(),
  command: yes(),
  variables: yes('the service container\'s own variables'),
};

export const CACHE_KEY_KEYWORDS: KeywordTable = {
  files: yes(),
  prefix: yes(),
  files_commits: yes('the key is the last commit that changed the files'),
};

export const CACHE_KEYWORDS: KeywordTable = {
  key: yes(undefined, CACHE_KEY_KEYWORDS),
  paths: yes(),
  untracked: yes(),
  policy: yes(),
  when: yes(),
  fallback_keys: yes(),
  unprotect: not('protected branches are a GitLab project setting; a local cache is not split by them'),
};

export const RETRY_KEYWORDS: KeywordTable = { max: yes(), when: yes(), exit_codes: yes() };

export const ENVIRONMENT_KEYWORDS: KeywordTable = {
  name: yes(),
  url: yes(),
  action: yes(),
  deployment_tier: yes(),
  on_stop: not('GitLab runs the stop job when the environment is stopped; a local run has no environments to stop'),
  auto_stop_in: not('GitLab stops the environment later; a local run has no environments to stop'),
  kubernetes: not('the GitLab agent for Kubernetes dashboard of the environment'),
};

const CHANGES_KEYWORDS: KeywordTable = { paths: yes(), compare_to: yes() };
const EXISTS_KEYWORDS: KeywordTable = {
  paths: yes(),
  project: on(refused('exists: project looks in another project, which a local run does not have')),
  ref: on(refused('exists: ref looks in another project, which a local run does not have')),
};

const RULE_BASE: KeywordTable = { if: yes(), changes: yes(undefined, CHANGES_KEYWORDS), exists: yes(undefined, EXISTS_KEYWORDS) };

export const AUTO_CANCEL_KEYWORDS: KeywordTable = {
  on_new_commit: yes('older pipelines of the ref on a server; exec runs one pipeline'),
  on_job_failure: yes(),
};

export const JOB_RULE_KEYWORDS: KeywordTable = {
  ...RULE_BASE,
  when: yes(),
  allow_failure: yes(),
  variables: yes(),
  start_in: yes(),
  needs: yes(),
  interruptible: yes(),
};

export const WORKFLOW_RULE_KEYWORDS: KeywordTable = { ...RULE_BASE, when: yes(), variables: yes(), auto_cancel: yes(undefined, AUTO_CANCEL_KEYWORDS) };

export const INCLUDE_RULE_KEYWORDS: KeywordTable = { ...RULE_BASE, when: yes() };

export const WORKFLOW_KEYWORDS: KeywordTable = {
  rules: yes(undefined, WORKFLOW_RULE_KEYWORDS),
  name: yes('the pipeline\'s name in exec\'s output and on the web page'),
  auto_cancel: yes(undefined, AUTO_CANCEL_KEYWORDS),
};

const OFFLINE = 'a local run reads only the files of this repository (no network): copy the file into the repository and use include: local';

/** `include:` entries; what is fetched from elsewhere is refused offline, as GitLab refuses what it cannot fetch. */
export const INCLUDE_KEYWORDS: KeywordTable = {
  local: yes(),
  rules: yes(undefined, INCLUDE_RULE_KEYWORDS),
  inputs: yes(),
  project: on(refused(OFFLINE)),
  ref: on(refused(OFFLINE)),
  file: on(refused(OFFLINE)),
  template: on(refused(OFFLINE)),
  remote: on(refused(OFFLINE)),
  integrity: on(refused(OFFLINE)),
  component: on(refused('CI/CD components are fetched from a GitLab instance, which a local run does not reach (no network): copy the component\'s template into the repository and use include: local with inputs')),
};

export const NEED_KEYWORDS: KeywordTable = {
  job: yes(),
  artifacts: yes(),
  optional: yes(),
  parallel: yes(undefined, { matrix: yes() }),
  pipeline: on(refused('needs: pipeline takes artifacts of another pipeline, which a local run does not have')),
  project: on(refused('needs: project is a cross-project need (GitLab Premium) on artifacts of another project, which a local run does not have')),
  ref: on(refused('needs: project is a cross-project need (GitLab Premium) on artifacts of another project, which a local run does not have')),
};

export const TRIGGER_INCLUDE_KEYWORDS: KeywordTable = {
  local: yes(),
  artifact: yes(),
  job: yes(),
  inputs: yes(),
  template: yes('listed and skipped when it runs: the child pipeline\'s file is elsewhere'),
  project: yes('listed and skipped when it runs: the child pipeline\'s file is elsewhere'),
  ref: yes(),
  file: yes(),
  remote: yes('listed and skipped when it runs: the child pipeline\'s file is elsewhere'),
  component: yes('listed and skipped when it runs: the child pipeline\'s file is elsewhere'),
};

export const TRIGGER_KEYWORDS: KeywordTable = {
  include: yes(undefined, TRIGGER_INCLUDE_KEYWORDS),
  project: yes('a multi-project pipeline: listed and skipped when it runs'),
  branch: yes(),
  strategy: yes(),
  forward: yes(undefined, { yaml_variables: yes(), pipeline_variables: yes() }),
  inputs: yes(),
};

export const PAGES_KEYWORDS: KeywordTable = {
  publish: yes('the directory is added to the job\'s artifacts'),
  path_prefix: not('GitLab Pages serves the site under this prefix; a local run publishes nothing'),
  expire_in: not('how long GitLab Pages keeps the deployment; a local run publishes nothing'),
};

export const ID_TOKEN_KEYWORDS: KeywordTable = { aud: yes() };

/** `release:` (GitLab's Entry::Release; read in release.ts). */
export const RELEASE_LINK_KEYWORDS: KeywordTable = { name: yes(), url: yes(), filepath: yes(), direct_asset_path: yes(), link_type: yes() };
export const RELEASE_KEYWORDS: KeywordTable = {
  tag_name: yes(),
  tag_message: yes(),
  name: yes(),
  description: yes(),
  ref: yes(),
  released_at: yes(),
  milestones: yes(),
  assets: yes(undefined, { links: yes(undefined, RELEASE_LINK_KEYWORDS) }),
};

const SECRETS = 'secrets come from an external secrets manager (Vault, a cloud secret store) that a local run has no access to: set the variables with -v or --env-file';

/** A job's keys: GitLab's `Entry::Job` and `Entry::Processable` and the schema's `job_template`. */
export const JOB_KEYWORDS: KeywordTable = {
  script: yes(),
  before_script: yes(),
  after_script: yes(),
  stage: yes(),
  type: yes('the old name of stage'),
  variables: yes(),
  image: yes(undefined, IMAGE_KEYWORDS),
  services: yes(undefined, SERVICE_KEYWORDS),
  artifacts: yes(undefined, ARTIFACTS_KEYWORDS),
  cache: yes(undefined, CACHE_KEYWORDS),
  dependencies: yes(),
  tags: yes('exec runs every job whatever its tags'),
  when: yes(),
  start_in: yes(),
  allow_failure: yes(undefined, { exit_codes: yes() }),
  timeout: yes(),
  extends: yes(),
  inherit: yes(undefined, { default: yes(), variables: yes() }),
  rules: yes(undefined, JOB_RULE_KEYWORDS),
  only: yes(undefined, { refs: yes(), variables: yes(), changes: yes(), kubernetes: not('GitLab\'s Kubernetes integration; a local run has none, so the condition is taken as not met') }),
  except: yes(undefined, { refs: yes(), variables: yes(), changes: yes(), kubernetes: not('GitLab\'s Kubernetes integration; a local run has none, so the condition is taken as not met') }),
  parallel: yes(undefined, { matrix: yes() }),
  needs: yes(undefined, NEED_KEYWORDS),
  retry: yes(undefined, RETRY_KEYWORDS),
  interruptible: yes(),
  coverage: yes(),
  environment: yes(undefined, ENVIRONMENT_KEYWORDS),
  trigger: yes(undefined, TRIGGER_KEYWORDS),
  resource_group: yes('jobs of one group run one at a time; a job waits as waiting_for_resource; process modes through the admin API'),
  id_tokens: yes('signed by the local server\'s own key, not GitLab\'s', {}),
  pages: yes('an ordinary job; its site is kept with its artifacts', PAGES_KEYWORDS),
  publish: yes('the old form of pages: publish'),
  release: yes('the release step runs after the script where the job runs, with GitLab\'s script (glab, else release-cli)', RELEASE_KEYWORDS),
  hooks: yes('pre_get_sources_script runs before the sources are fetched, where the job runs (never on the runner\'s host)', { pre_get_sources_script: yes() }),
  secrets: not(SECRETS),
  identity: not('workload identity federation authenticates with GitLab\'s OIDC provider, which a local run is not'),
  manual_confirmation: not('GitLab asks for this confirmation before playing the manual job; exec --manual plays it without asking'),
  inputs: not('job inputs are set when a person runs the job on GitLab; here the defaults are what the job gets'),
  run: not('CI/CD steps are run by GitLab\'s step runner; here only steps with a script: are run, as commands'),
};

/** `default:` — the job keys every job inherits. */
export const DEFAULT_KEYWORDS: KeywordTable = {
  after_script: yes(),
  artifacts: JOB_KEYWORDS.artifacts as Keyword,
  before_script: yes(),
  cache: JOB_KEYWORDS.cache as Keyword,
  image: JOB_KEYWORDS.image as Keyword,
  services: JOB_KEYWORDS.services as Keyword,
  interruptible: yes(),
  retry: JOB_KEYWORDS.retry as Keyword,
  tags: yes(),
  timeout: yes(),
  id_tokens: JOB_KEYWORDS.id_tokens as Keyword,
  identity: JOB_KEYWORDS.identity as Keyword,
  hooks: JOB_KEYWORDS.hooks as Keyword,
};

/** Top-level keys that are not jobs. */
export const GLOBAL_KEYWORDS: KeywordTable = {
  stages: yes(),
  types: yes('the old name of stages'),
  variables: yes(),
  default: yes(undefined, DEFAULT_KEYWORDS),
  workflow: yes(undefined, WORKFLOW_KEYWORDS),
  include: yes(undefined, INCLUDE_KEYWORDS),
  before_script: yes(),
  after_script: yes(),
  image: yes(undefined, IMAGE_KEYWORDS),
  services: yes(undefined, SERVICE_KEYWORDS),
  cache: yes(undefined, CACHE_KEYWORDS),
  spec: yes('the header document of a file with inputs'),
  $schema: yes('for editors: which JSON schema checks the file'),
};

/** The names of a table's keys, for messages. */
export function keywordNames(table: KeywordTable): string[] {
  return Object.keys(table);
}
