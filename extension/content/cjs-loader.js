// Lets the vendored CommonJS files of vendor/dom-accessibility-api run unmodified as classic
// content scripts (the extension has no build step): they read a global `exports` and call a
// global `require`. Each file gets its own exports object, found from the file named on the
// call stack, so the manifest lists the files and nothing between them. Files are listed so that
// getRole.js runs before util.js (they require each other; util copies getRole's exports once).
(() => {
  if (globalThis.browserMcpModules) return; // injected twice (manifest + on-demand injection)
  const modules = new Map();
  const moduleOf = (id) => {
    let m = modules.get(id);
    if (!m) modules.set(id, (m = {}));
    return m;
  };
  const FILE = /\/vendor\/dom-accessibility-api\/dist\/(.+?)\.js:\d+/;
  Object.defineProperty(globalThis, 'exports', {
    configurable: true,
    get() {
      const file = FILE.exec(new Error().stack);
      if (!file) throw new Error('browser-mcp: `exports` read outside a vendored module');
      return moduleOf(file[1]);
    },
  });
  globalThis.require = (path) => moduleOf(path.replace(/^\.\//, '').replace(/\.js$/, ''));
  globalThis.browserMcpModules = { get: (id) => modules.get(id) };
})();
