/**
 * `npm run build`'s last step, after tsc: the page's static files copied into `dist/`, then the installed
 * CLI as a bundle: `dist/cli/main.js` and the chunks it loads on demand (one per command
 * and per lazily loaded part, in `dist/cli/chunks/`), made by esbuild from what tsc wrote to `dist/`.
 *
 * Why: Node's ESM loader resolves, reads and links each module file on its own. A one-job `exec` loaded
 * ~720 of them (ours and our libraries'), about 0.35 s of its start on the reference machine; the bundle
 * loads a few dozen. The libraries are the same, bundled as they are; the rest of `dist/` stays as tsc
 * wrote it (tests and benchmarks import its modules).
 *
 * Left out of the bundle, loaded from node_modules at run time: the cloud SDKs and the Kubernetes client
 * (large, loaded only by the executors and caches that use them) and pino (its transports start worker
 * threads from files of its own package). undici is required through `createRequire` (src/client/undici.ts)
 * and stays in node_modules too.
 */
import { chmodSync, cpSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { build } from 'esbuild';

/**
 * zod's index re-exports every locale's messages (~360 kB of the bundle, parsed at every start); the
 * runner uses English alone, which zod installs itself. The locales index resolves to English only.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({ contents: 'export { default as en } from "./en.js";\n', resolveDir: dirname(args.path), loader: 'js' }));
  },
};

/**
 * string-width (yargs's and cliui's, to measure help text) builds an `Intl.Segmenter` and Unicode
 * property regexes (`\p{RGI_Emoji}`) when its module is evaluated: ~34 ms at every start, for text that
 * is measured only when help or an error is printed. Each import of it becomes a stub that evaluates the
 * real module (the importer's own version) at the first call.
 */
const lazyStringWidth = {
  name: 'lazy-string-width',
  setup(build) {
    build.onResolve({ filter: /^string-width$/ }, async (args) => {
      if (args.pluginData?.real) return undefined;
      const real = await build.resolve(args.path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { real: true } });
      if (real.errors.length > 0) return { errors: real.errors };
      return { path: real.path, namespace: 'lazy-string-width' };
    });
    build.onLoad({ filter: /.*/, namespace: 'lazy-string-width' }, (args) => ({
      contents: `let width;\nexport default function stringWidth(text, options) {\n  width ??= require(${JSON.stringify(args.path)}).default;\n  return width(text, options);\n}\n`,
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

const EXTERNAL = ['pino', 'pino-*', 'thread-stream', '@aws-sdk/*', '@smithy/*', '@azure/*', '@google-cloud/*', '@kubernetes/*'];

cpSync('src/server/ui/static', 'dist/server/ui/static', { recursive: true });
rmSync('dist/cli/chunks', { recursive: true, force: true });
await build({
  entryPoints: ['dist/cli/main.js'],
  outdir: 'dist/cli',
  allowOverwrite: true,
  entryNames: '[name]',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  // Bundled CommonJS libraries call `require` for Node's built-ins; an ES module has none of its own.
  banner: { js: "import { createRequire as __ciRunnerCreateRequire } from 'node:module'; const require = __ciRunnerCreateRequire(import.meta.url);" },
  sourcemap: 'linked',
  legalComments: 'linked',
  logLevel: 'warning',
  plugins: [zodEnglishOnly, lazyStringWidth],
});
chmodSync('dist/cli/main.js', 0o755);
