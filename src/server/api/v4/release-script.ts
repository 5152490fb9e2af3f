/**
 * The script of a job's `release` step, as GitLab 17–19 writes it for a Linux runner
 * (Gitlab::Ci::Build::Releaser#unix_script): glab 1.58.0 or newer creates the release when the job's
 * image has it, else release-cli does, after a warning that release-cli goes with GitLab 20. The
 * release's fields go in as written, `$VARIABLES` and all: the runner expands them in this step's
 * script (GitLab Runner's writeUserScript does for `release`). One multi-line command.
 */
import type { JobReleaseSpec } from '../../../pipeline/spec.js';

/** The glab release that knows every flag used below. */
const GLAB_REQUIRED_VERSION = '1.58.0';
const TROUBLESHOOTING = 'https://docs.gitlab.com/user/project/releases/#gitlab-cli-version-requirement';
const WARNING = `Warning: release-cli will not be supported after 20.0. Please use glab version >= ${GLAB_REQUIRED_VERSION}. Troubleshooting: ${TROUBLESHOOTING}`;
const CA_FILE = 'ca_cert_for_releasing_with_glab.pem';

/** The release step's `script`: one command. */
export function releaseScript(release: JobReleaseSpec): string[] {
  return [
    [
      'if command -v glab &> /dev/null; then',
      `  if [ "$(printf "%s\\n%s" "${GLAB_REQUIRED_VERSION}" "$(glab --version | grep -oE '[0-9]+\\.[0-9]+\\.[0-9]+')" | sort -V | head -n1)" = "${GLAB_REQUIRED_VERSION}" ]; then`,
      '    export GITLAB_HOST=$CI_SERVER_URL',
      '    if [ -n "$ADDITIONAL_CA_CERT_BUNDLE" ]; then',
      '      echo "Setting CA certificate for $CI_SERVER_FQDN"',
      `      if echo "$ADDITIONAL_CA_CERT_BUNDLE" | grep -q $'\\\\n'; then`,
      `        echo "$ADDITIONAL_CA_CERT_BUNDLE" > "${CA_FILE}"`,
      `        glab config set ca_cert "${CA_FILE}" --host "$CI_SERVER_FQDN"`,
      '      else',
      '        glab config set ca_cert "$ADDITIONAL_CA_CERT_BUNDLE" --host "$CI_SERVER_FQDN"',
      '      fi',
      '    fi',
      '    glab auth login --job-token $CI_JOB_TOKEN --hostname "$CI_SERVER_FQDN" --api-protocol $CI_SERVER_PROTOCOL',
      `    ${glabCreate(release)}`,
      `    if [ -f "${CA_FILE}" ]; then`,
      `      rm -f "${CA_FILE}"`,
      '    fi',
      '  else',
      `    echo "${WARNING}"`,
      '',
      `    ${releaseCliCreate(release)}`,
      '  fi',
      'else',
      `  echo "${WARNING}"`,
      '',
      `  ${releaseCliCreate(release)}`,
      'fi',
      '',
    ].join('\n'),
  ];
}

/** `release-cli create` with the release's fields, in GitLab's order. */
function releaseCliCreate(release: JobReleaseSpec): string {
  let command = 'release-cli create';
  const single: Array<[string, string | undefined]> = [
    ['name', release.name],
    ['description', release.description],
    ['tag-name', release.tag_name],
    ['tag-message', release.tag_message],
    ['ref', release.ref],
    ['released-at', release.released_at],
  ];
  for (const [flag, value] of single) if (value !== undefined) command += ` --${flag} "${value}"`;
  for (const milestone of release.milestones ?? []) command += ` --milestone "${milestone}"`;
  for (const link of release.assets?.links ?? []) command += ` --assets-link ${twiceJson(link)}`;
  return command;
}

/** `glab release create` with the release's fields, in GitLab's order. */
function glabCreate(release: JobReleaseSpec): string {
  let command = `glab release create -R $CI_PROJECT_PATH "${release.tag_name || '$CI_COMMIT_TAG'}"`;
  const links = release.assets?.links ?? [];
  if (links.length > 0) command += ` --assets-links ${twiceJson(links)}`;
  if (release.milestones && release.milestones.length > 0) command += ` --milestone "${release.milestones.join(',')}"`;
  if (release.name) command += ` --name "${release.name}"`;
  if (release.description) command += ` --experimental-notes-text-or-file "${release.description}"`;
  command += ` --ref "${release.ref || '$CI_COMMIT_SHA'}"`;
  if (release.tag_message) command += ` --tag-message "${release.tag_message}"`;
  if (release.released_at) command += ` --released-at "${release.released_at}"`;
  return `${command} --no-update --no-close-milestone`;
}

/** GitLab's `object.to_json.to_json`: the JSON text, as a JSON string (quoted, escaped). */
function twiceJson(value: unknown): string {
  return JSON.stringify(JSON.stringify(value));
}
