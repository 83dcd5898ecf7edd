// Which browser family runs the extension, and what each one lacks. Both expose the `chrome.*`
// namespace with promises (Firefox also as `browser.*`), so the code calls `chrome.*` and asks
// here only where behaviour differs. Firefox alone has runtime.getBrowserInfo.
// Outside an extension (tests/extension, under Node) there is no chrome: that is neither family.
export const isFirefox = typeof globalThis.chrome?.runtime?.getBrowserInfo === 'function';
