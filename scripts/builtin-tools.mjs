// Prints the extension's built-in tool declarations (extension/worker/tools/builtins.js) as JSON,
// for the benchmark's scripted browser: its tabs then offer what the real extension offers.
// The worker's modules register listeners on `chrome` as they load; a stand-in that accepts
// anything lets them load outside a browser. Nothing here runs a tool.
const anything = () =>
  new Proxy(function () {}, {
    get: (_, key) => (key === 'then' ? undefined : anything()),
    apply: () => anything(),
  });
globalThis.chrome = anything();
const { BUILTIN_TOOLS } = await import('../extension/worker/tools/builtins.js');
process.stdout.write(JSON.stringify(BUILTIN_TOOLS));
