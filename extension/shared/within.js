// Waiting for something, but not for long: a promise that settles as `promise` does, or
// resolves with undefined after `ms`, whichever comes first. The timer is cleared either way,
// so a worker that waited is not kept awake by it. The work itself goes on: only the wait ends.
export function within(promise, ms) {
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
