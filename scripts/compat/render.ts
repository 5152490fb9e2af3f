/**
 * docs/compatibility.md, rendered from the code's compatibility tables (STYLE.md habit 15): what
 * ci-runner does with every name of GitLab Runner's an operator may carry over. `npm run docs:compat`
 * writes it; test/docs/compatibility-page.test.ts fails when the committed page differs.
 */
import { commandFlags, commandRows } from './cli.js';
import { counts, slug, table, type Row } from './markdown.js';
import { configKeyRows, controlVariableRows, executorRows, featureFlagRows, featureRows, keywordRows, metricRows, shellRows, stageRows } from './surfaces.js';

interface Surface {
  readonly title: string;
  /** Where the names come from and what the status means for them. */
  readonly intro: string;
  readonly parts: ReadonlyArray<{ readonly heading?: string; readonly header: readonly string[]; readonly rows: readonly Row[] }>;
}

export async function renderCompatibilityPage(): Promise<string> {
  const flags = await commandFlags();
  const describe = new Map(flags.map((f) => [f.command, f.describe]));
  const surfaces: Surface[] = [
    {
      title: 'config.toml keys',
      intro:
        "Every key GitLab Runner 19.3 reads, at its path (`runners.docker.volumes`; an array of tables without an index), and ci-runner's own. " +
        'A warned key is dropped with one warning naming it and its line; a misspelt key (in no table) stops the load with the file, the line and the keys that table has. ' +
        'See [configuration.md](configuration.md).',
      parts: [{ header: ['key', 'whose'], rows: configKeyRows() }],
    },
    {
      title: 'executor and shell values',
      intro: 'The values of a `[[runners]]` entry\'s `executor` and `shell`: an entry with a refused one is refused, with the reason.',
      parts: [
        { heading: 'executor', header: ['executor'], rows: executorRows() },
        { heading: 'shell', header: ['shell'], rows: shellRows() },
      ],
    },
    {
      title: 'Commands',
      intro: 'Every command name ci-runner answers to, and GitLab Runner\'s that it does not have (those exit 2 with the reason). `ci-runner COMMAND --help` gives the page of each.',
      parts: [{ header: ['command', 'whose', 'what it does'], rows: commandRows(describe) }],
    },
    {
      title: 'Command-line flags and their environment names',
      intro:
        "Each command's flags as `--help` lists them, and the ones it hides: GitLab Runner's flags that are accepted with a warning or refused. " +
        'A flag not listed for a command is refused as an unknown argument (exit 2). A value from an environment name is checked as the flag\'s is; a warned flag warns when it comes from its environment name too.',
      parts: flags.map((f) => ({ heading: f.command, header: ['flag', 'short / other names', 'environment', 'what it does'], rows: f.rows })),
    },
    {
      title: 'Control variables',
      intro: 'The job variables GitLab Runner 19 reads to steer a job. A job setting a warned one gets one warning line in its log. See [jobs.md](jobs.md).',
      parts: [{ header: ['variable', 'default', 'accepts'], rows: controlVariableRows() }],
    },
    {
      title: 'Feature flags',
      intro:
        'GitLab Runner 19.3\'s `FF_*` flags, from `[runners.feature_flags]` or a job variable. For a flag not honoured, "behaves as" is the value whose behaviour ci-runner has anyway; set to the other value, the flag draws its warning.',
      parts: [{ header: ['flag', 'default', 'behaves as'], rows: featureFlagRows() }],
    },
    {
      title: 'info.features',
      intro: 'What the runner announces to GitLab over `/api/v4` (GitLab hands it only jobs it can run): true for the executors listed, false otherwise. See [protocol-v4.md](protocol-v4.md).',
      parts: [{ header: ['feature', 'announced for'], rows: featureRows() }],
    },
    {
      title: 'Job stages',
      intro: 'GitLab Runner\'s stages of a job, in the order they run, with the line that opens each log section and where ci-runner runs it (`runner`: in the runner process; `host`: a shell on the runner\'s host; `executor`: where the job runs).',
      parts: [{ header: ['stage', 'log section', 'runs in', 'retried by', 'bounded by'], rows: stageRows() }],
    },
    {
      title: 'Prometheus metrics',
      intro: 'Every series GitLab Runner 19.3 exports, and ci-runner\'s own; a warned one is not exported, for the reason given. See [operations.md](operations.md).',
      parts: [{ header: ['metric', 'type', 'labels', 'whose'], rows: metricRows() }],
    },
    {
      title: '.gitlab-ci.yml keywords (exec and serve)',
      intro:
        'Every keyword of GitLab\'s CI schema as the embedded server and `ci-runner exec` read it (against GitLab, GitLab reads the file; this is about local runs). ' +
        'A warned keyword is listed once per pipeline as "not applied locally"; a key in no table is refused as GitLab refuses it. `<job>` stands for any job. See [exec.md](exec.md).',
      parts: [{ header: ['keyword'], rows: keywordRows() }],
    },
  ];
  return page(surfaces);
}

function page(surfaces: readonly Surface[]): string {
  const summary = surfaces.map((s) => {
    const c = counts(s.parts.flatMap((p) => p.rows));
    return `| [${s.title}](#${slug(s.title)}) | ${c.honoured} | ${c.warned} | ${c.refused} |`;
  });
  const sections = surfaces.map((s) => {
    const parts = s.parts.map((p) => `${p.heading === undefined ? '' : `### ${p.heading}\n\n`}${table(p.header, p.rows)}\n`);
    return `## ${s.title}\n\n${s.intro}\n\n${parts.join('\n')}`;
  });
  return [
    '<!-- Generated by `npm run docs:compat` (scripts/compat-page.ts) from the compatibility tables in src/. Do not edit: change the table, then regenerate. -->',
    '',
    '# Compatibility with GitLab Runner 19',
    '',
    'What ci-runner does with each name of GitLab Runner\'s that an existing set-up may carry over, read from the tables the code itself uses: **honoured** (it does what GitLab Runner does; a note says where the detail differs), **warned** (accepted, with one warning giving the reason; it has no effect), or **refused** (the input is refused with the reason, because doing anything else would be worse than stopping). Nothing is ignored silently. [migrating.md](migrating.md) walks through a migration step by step.',
    '',
    '| surface | honoured | warned | refused |',
    '| --- | --- | --- | --- |',
    ...summary,
    '',
    ...sections,
  ].join('\n');
}
