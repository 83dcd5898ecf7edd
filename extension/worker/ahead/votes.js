// Something that is on while any of its voters wants it: each voter's last word counts once,
// and a voter that leaves takes its vote with it (watch.js: the daemons, one vote a connection).
export class Votes {
  #yes = new Set();

  get any() {
    return this.#yes.size > 0;
  }

  // Returns whether any voter wants it now.
  set(voter, yes) {
    if (yes === true) this.#yes.add(voter);
    else this.#yes.delete(voter);
    return this.any;
  }

  drop(voter) {
    return this.set(voter, false);
  }
}
