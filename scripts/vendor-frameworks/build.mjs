// Builds tests/e2e/pages/frameworks/vendor/ from the packages npm installed beside this file
// (scripts/vendor-frameworks.sh runs it): the libraries that ship a browser build are copied as
// published; those that ship none (React 19, Material UI, React Aria, Radix, Headless UI, Lexical, Tiptap,
// CodeMirror) and the Svelte
// page are bundled with esbuild, minified, for production, with React left to the page's one
// copy (window.React), so that every React library on a page shares it.
import { build } from 'esbuild';
import { compile } from 'svelte/compiler';
import { transformSync } from '@babel/core';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '../../tests/e2e/pages/frameworks/vendor');
// Each library's directory is made anew; the README beside them stays.
for (const d of ['react', 'mui', 'react-aria', 'rc-select', 'lexical', 'svelte', 'slate', 'vue', 'jquery', 'chartjs', 'radix', 'headlessui', 'tiptap', 'codemirror', 'quill', 'solid', 'preact', 'signature_pad', 'react-select', 'ark', 'trix', 'editorjs', 'dnd-kit']) {
  rmSync(join(out, d), { recursive: true, force: true });
}
const pkg = (name) => JSON.parse(readFileSync(join(here, 'node_modules', name, 'package.json')));

// `import … from 'react'` inside a bundle is the page's React.
const reactGlobals = {
  name: 'react-globals',
  setup(b) {
    const globals = {
      react: 'React',
      'react-dom': 'ReactDOM',
      'react-dom/client': 'ReactDOM',
      'react/jsx-runtime': 'ReactJSXRuntime',
    };
    b.onResolve({ filter: /^(react|react-dom|react-dom\/client|react\/jsx-runtime)$/ }, (a) => ({
      path: a.path,
      namespace: 'react-global',
    }));
    b.onLoad({ filter: /.*/, namespace: 'react-global' }, (a) => ({
      contents: `module.exports = window.${globals[a.path]};`,
      loader: 'js',
    }));
  },
};

// A .svelte file, compiled by Svelte's compiler for the browser.
const svelteFiles = {
  name: 'svelte',
  setup(b) {
    b.onLoad({ filter: /\.svelte$/ }, (a) => ({
      contents: compile(readFileSync(a.path, 'utf8'), { filename: a.path, generate: 'client' }).js.code,
      loader: 'js',
      resolveDir: join(here, 'node_modules'),
    }));
  },
};

// A .jsx file of Solid's, compiled by Solid's own Babel preset for the browser.
const solidFiles = {
  name: 'solid',
  setup(b) {
    b.onLoad({ filter: /\.jsx$/ }, (a) => ({
      contents: transformSync(readFileSync(a.path, 'utf8'), {
        filename: a.path,
        presets: [join(here, 'node_modules/babel-preset-solid')],
        babelrc: false,
        configFile: false,
      }).code,
      loader: 'js',
      resolveDir: join(here, 'node_modules'),
    }));
  },
};

async function bundle(entry, file, { globalName, plugins = [reactGlobals] } = {}) {
  mkdirSync(dirname(join(out, file)), { recursive: true });
  await build({
    entryPoints: [join(here, 'entries', entry)],
    outfile: join(out, file),
    bundle: true,
    format: 'iife',
    globalName,
    minify: true,
    legalComments: 'none',
    target: 'es2020',
    platform: 'browser',
    conditions: ['production'],
    define: { 'process.env.NODE_ENV': '"production"' },
    nodePaths: [join(here, 'node_modules')],
    plugins,
    logLevel: 'warning',
  });
}

function copy(name, files, dir = name) {
  for (const f of files) {
    const to = join(out, dir, f.split('/').pop());
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(join(here, 'node_modules', name, f), to);
  }
}

// Each directory gets its package's licence file(s), as published.
function licence(name, dir, files) {
  for (const f of files) copyFileSync(join(here, 'node_modules', name, f), join(out, dir, f));
}

await bundle('react.js', 'react/react.min.js', { plugins: [] });
licence('react', 'react', ['LICENSE']);
await bundle('mui.js', 'mui/mui.min.js', { globalName: 'MUI' });
licence('@mui/material', 'mui', ['LICENSE']);
await bundle('react-aria.js', 'react-aria/react-aria.min.js', { globalName: 'ReactAria' });
licence('react-aria-components', 'react-aria', ['LICENSE']);
await bundle('rc-select.js', 'rc-select/rc-select.min.js', { globalName: 'RcSelect' });
copyFileSync(join(here, 'node_modules/@rc-component/select/assets/index.css'), join(out, 'rc-select/index.css'));
licence('@rc-component/select', 'rc-select', ['LICENSE', 'LICENSE.md']);
await bundle('lexical.js', 'lexical/lexical.min.js', { globalName: 'Lexical', plugins: [] });
licence('lexical', 'lexical', ['LICENSE']);
await bundle('svelte.js', 'svelte/svelte-cart.min.js', { plugins: [svelteFiles] });
licence('svelte', 'svelte', ['LICENSE.md']);
await bundle('radix.js', 'radix/radix.min.js', { globalName: 'Radix' });
licence('radix-ui', 'radix', ['LICENSE']);
await bundle('headlessui.js', 'headlessui/headlessui.min.js', { globalName: 'HeadlessUI' });
licence('@headlessui/react', 'headlessui', ['LICENSE']);
// Headless UI bundles React Aria's focus and interaction hooks (Apache-2.0).
copyFileSync(join(here, 'node_modules/@react-aria/interactions/LICENSE'), join(out, 'headlessui/LICENSE-react-aria'));
await bundle('react-select.js', 'react-select/react-select.min.js', { globalName: 'ReactSelect' });
licence('react-select', 'react-select', ['LICENSE']);
await bundle('ark.js', 'ark/ark.min.js', { globalName: 'Ark' });
licence('@ark-ui/react', 'ark', ['LICENSE']);
await bundle('dnd-kit.js', 'dnd-kit/dnd-kit.min.js', { globalName: 'DndKit' });
licence('@dnd-kit/core', 'dnd-kit', ['LICENSE']);
await bundle('tiptap.js', 'tiptap/tiptap.min.js', { globalName: 'Tiptap', plugins: [] });
licence('@tiptap/core', 'tiptap', ['LICENSE.md']);
copyFileSync(join(here, 'node_modules/prosemirror-view/LICENSE'), join(out, 'tiptap/LICENSE-prosemirror'));
await bundle('codemirror.js', 'codemirror/codemirror.min.js', { globalName: 'CodeMirror', plugins: [] });
licence('codemirror', 'codemirror', ['LICENSE']);
await bundle('solid.js', 'solid/solid-list.min.js', { plugins: [solidFiles] });
licence('solid-js', 'solid', ['LICENSE']);
await bundle('preact.js', 'preact/preact.min.js', { globalName: 'Preact', plugins: [] });
licence('preact', 'preact', ['LICENSE']);
copyFileSync(join(here, 'node_modules/htm/LICENSE'), join(out, 'preact/LICENSE-htm'));

copy('slate', ['dist/slate.min.js']);
copy('slate-history', ['dist/slate-history.min.js'], 'slate');
copy('slate-react', ['dist/slate-react.min.js'], 'slate');
// Slate's packages carry no licence file: the repository's, with a line saying so.
writeFileSync(
  join(out, 'slate/LICENSE'),
  `slate, slate-history and slate-react are published under the MIT licence (their package.json:
"license": "MIT"); the packages ship no licence file of their own. The licence of their
repository (ianstormtaylor/slate):

${readFileSync(join(here, 'slate-license.txt'), 'utf8')}`,
);
copy('vue', ['dist/vue.global.prod.js']);
licence('vue', 'vue', ['LICENSE']);
copy('jquery', ['dist/jquery.min.js']);
licence('jquery', 'jquery', ['LICENSE.txt']);
copy('chart.js', ['dist/chart.umd.min.js'], 'chartjs');
licence('chart.js', 'chartjs', ['LICENSE.md']);
copy('quill', ['dist/quill.js', 'dist/quill.snow.css']);
licence('quill', 'quill', ['LICENSE']);
copy('trix', ['dist/trix.umd.min.js', 'dist/trix.css']);
licence('trix', 'trix', ['LICENSE']);
copy('@editorjs/editorjs', ['dist/editorjs.umd.js', 'dist/vendor.LICENSE.txt'], 'editorjs');
licence('@editorjs/editorjs', 'editorjs', ['LICENSE']);
copy('signature_pad', ['dist/signature_pad.umd.min.js']);
licence('signature_pad', 'signature_pad', ['LICENSE']);

for (const name of ['react', '@mui/material', 'react-aria-components', '@rc-component/select', 'lexical', 'svelte', 'slate', 'slate-react', 'vue', 'jquery', 'chart.js', 'radix-ui', '@headlessui/react', '@tiptap/core', 'codemirror', 'quill', 'solid-js', 'preact', 'htm', 'signature_pad', 'react-select', '@ark-ui/react', 'trix', '@editorjs/editorjs', '@dnd-kit/core', '@dnd-kit/sortable']) {
  console.log(`${name} ${pkg(name).version}`);
}
