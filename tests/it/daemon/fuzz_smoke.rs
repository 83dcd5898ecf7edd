//! The fuzz targets of `fuzz/` (the parsers that read what peers send), run briefly in CI:
//! every seed, then a few thousand deterministic mutations of them each. The long runs with
//! coverage guidance are `scripts/fuzz.sh` (libFuzzer); this keeps the targets compiling and
//! catches the shallow crashes on every `cargo test`.

#[path = "../../../fuzz/src/lib.rs"]
mod targets;

use crate::support::common::XorShift;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn dictionary() -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("fuzz/json.dict")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix('"')?.strip_suffix('"'))
        .map(|t| t.replace("\\\"", "\"").replace("\\\\", "\\").into_bytes())
        .collect()
}

fn seeds(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(ROOT).join("fuzz/seeds").join(target);
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    out.sort();
    out
}

/// One mutation of `input`: flip, insert a token, delete, duplicate, or splice.
fn mutate(rng: &mut XorShift, input: &[u8], dict: &[Vec<u8>], pool: &[Vec<u8>]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let token = &dict[rng.below(dict.len())];
                v.splice(at..at, token.iter().copied());
            }
            2 if !v.is_empty() => {
                let end = (at + rng.below(16)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 if !v.is_empty() => {
                let start = rng.below(v.len());
                let end = (start + rng.below(32)).min(v.len());
                let piece: Vec<u8> = v[start..end].to_vec();
                v.splice(at..at, piece);
            }
            4 => {
                let other = &pool[rng.below(pool.len())];
                let from = rng.below(other.len());
                v.truncate(at);
                v.extend_from_slice(&other[from..]);
            }
            _ => {
                let i = rng.below(v.len() + 1);
                v.insert(i.min(v.len()), b"{}[]\":,0"[rng.below(8)]);
            }
        }
    }
    v.truncate(4096);
    v
}

#[test]
fn fuzz_targets_survive_their_seeds_and_mutations() {
    let runs: usize = std::env::var("FUZZ_SMOKE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let dict = dictionary();
    for (name, target) in targets::TARGETS {
        let pool = seeds(name);
        assert!(!pool.is_empty(), "{name} has seeds");
        for s in &pool {
            target(s);
        }
        let mut rng = XorShift(0x5EED_0000 + name.len() as u64);
        let mut current = pool[0].clone();
        for i in 0..runs {
            let base = if i % 8 == 0 {
                &pool[rng.below(pool.len())]
            } else {
                &current
            };
            let input = mutate(&mut rng, base, &dict, &pool);
            target(&input);
            current = input;
        }
    }
}
