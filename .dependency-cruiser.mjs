/**
 * The layers of src/ (docs/architecture.md): each folder imports only from its own layer or the
 * layers below it, and no module or folder is part of a circle. `npm run lint:deps`
 * checks it, and so does `npm test` (test/architecture/layers.test.ts).
 *
 * Type-only imports count: a type that points up ties the lower layer to the higher one as much as
 * a value does.
 */

/** Bottom first. A folder of src/ not listed here belongs to no layer, which is itself an error. */
const LAYERS = [
  ['util', 'log', 'protocol'],
  ['client', 'trace', 'artifacts', 'cache', 'git', 'executors', 'metrics'],
  ['agent', 'pipeline'],
  ['server', 'exec'],
  ['cli', 'service'],
];

const folders = (names) => `^src/(${names.join('|')})/`;

/** One rule per layer: nothing in it imports a layer above it. */
const upward = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `layer-${index + 1}-points-down`,
  comment: `${layer.join(', ')} must not import ${LAYERS.slice(index + 1).flat().join(', ')}`,
  severity: 'error',
  from: { path: folders(layer) },
  to: { path: folders(LAYERS.slice(index + 1).flat()) },
}));

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...upward,
    {
      name: 'no-circle',
      comment: 'modules import each other, directly or through others: cut the shared part out into a module both import',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-circle',
      comment: 'two folders import each other (directly or through others): one of them belongs below the other',
      severity: 'error',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'executor-stands-alone',
      comment:
        'an executor (a folder of src/executors/) imports only its own folder, executors/common/ (what executors share), executors/cgroup/ and the files beside them (types.ts): a piece two executors need moves into common/',
      severity: 'error',
      from: { path: '^src/executors/([^/]+)/' },
      to: { path: '^src/executors/[^/]+/', pathNot: '^src/executors/($1|common|cgroup)/' },
    },
    {
      name: 'in-a-layer',
      comment: 'every module lives in a folder of a layer (.dependency-cruiser.mjs lists them)',
      severity: 'error',
      from: { path: '^src/', pathNot: [folders(LAYERS.flat())] },
      to: {},
    },
    {
      name: 'to-a-layer',
      comment: 'every module lives in a folder of a layer (.dependency-cruiser.mjs lists them)',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: [folders(LAYERS.flat())] },
    },
    {
      name: 'resolvable',
      comment: 'an import that resolves to nothing',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/server/ui/static/' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};
