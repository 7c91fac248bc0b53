//! Every fuzz target's checked-in corpus (`fuzz/corpus/TARGET/`), replayed
//! through its property on the stable build, with inputs made from each seed
//! by seeded mutation (cut short, bytes flipped, ranges dropped or doubled,
//! JSON's own delimiters put in). What cargo fuzz found and a developer
//! committed as a seed is checked on every `cargo test` from then on.
//!
//! A failing input is written to `target/fuzz-replay/TARGET/`, where
//! `cargo +NIGHTLY fuzz run -O -s none TARGET FILE` (fuzz/README.md) or this
//! test replays it.
//!
//! `HOOKBOX_FUZZ_MUTANTS` sets the mutants per seed (default 24).

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use hookbox_fuzz_properties::{TARGETS, Target};

/// The workspace root (this crate is `tests/fuzz`).
fn root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .nth(2)
        .unwrap_or(manifest_dir)
        .to_path_buf()
}

/// The seeds of one target, in name order.
fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = root().join("fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name, bytes)
        })
        .collect()
}

/// splitmix64: small, seeded, the same inputs on every machine.
struct Rng(u64);

impl Rng {
    fn for_seed(name: &str, bytes: &[u8]) -> Rng {
        // FNV-1a over the seed's name and bytes.
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for byte in name.bytes().chain(bytes.iter().copied()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(hash)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes a decoder of JSON, TOML or the agents' inputs treats specially.
const INTERESTING: &[u8] = b"\0\xff\x80\"\\{}[]:,=\n0-eE.tfn";

/// One input made from `seed` by one to four edits.
fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = data.len();
        match rng.below(6) {
            0 => data.truncate(rng.below(len + 1)),
            1 if len > 0 => {
                let at = rng.below(len);
                data[at] ^= 1 << rng.below(8);
            }
            2 if len > 0 => {
                let at = rng.below(len);
                data[at] = INTERESTING[rng.below(INTERESTING.len())];
            }
            3 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(16)).min(len);
                data.drain(at..end);
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(64)).min(len);
                let copy = data[at..end].to_vec();
                let to = rng.below(data.len() + 1);
                data.splice(to..to, copy);
            }
            _ => {
                let to = rng.below(len + 1);
                data.insert(to, INTERESTING[rng.below(INTERESTING.len())]);
            }
        }
    }
    data
}

fn mutants_per_seed() -> usize {
    std::env::var("HOOKBOX_FUZZ_MUTANTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(24)
}

/// Runs `target` on `input`; a panic is written out and described.
fn run(target: &Target, what: &str, input: &[u8]) -> Result<(), String> {
    let Err(panic) = catch_unwind(AssertUnwindSafe(|| (target.check)(input))) else {
        return Ok(());
    };
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic without a message".into());
    let dir = root().join("target/fuzz-replay").join(target.name);
    let file = dir.join(what.replace(['/', ' '], "_"));
    let saved = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&file, input))
        .map_or_else(
            |e| format!("not saved: {e}"),
            |()| format!("saved as {}", file.display()),
        );
    Err(format!("{}: {what}: {message} ({saved})", target.name))
}

fn replay(target: &Target) {
    let seeds = seeds(target.name);
    assert!(
        !seeds.is_empty(),
        "fuzz/corpus/{} has no seeds; add at least one input worth keeping",
        target.name
    );
    let mutants = mutants_per_seed();
    let mut failures = Vec::new();
    for (name, bytes) in &seeds {
        failures.extend(run(target, &format!("seed {name}"), bytes).err());
        let mut rng = Rng::for_seed(name, bytes);
        for k in 0..mutants {
            let input = mutate(bytes, &mut rng);
            failures.extend(run(target, &format!("seed {name} mutant {k}"), &input).err());
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} inputs break the property:\n{}",
        failures.len(),
        seeds.len() * (1 + mutants),
        failures.join("\n")
    );
}

/// Every target's corpus, the targets side by side (a thread each).
#[test]
fn every_target_holds_on_its_corpus_and_mutants() {
    std::thread::scope(|scope| {
        for target in TARGETS {
            std::thread::Builder::new()
                .name(target.name.into())
                .spawn_scoped(scope, || replay(target))
                .expect("a thread");
        }
    });
}

/// A target added to `fuzz/` or a corpus folder added to `fuzz/corpus/` that
/// this test does not replay fails here, naming it.
#[test]
fn every_fuzz_target_and_corpus_is_replayed() {
    #[derive(serde::Deserialize)]
    struct Manifest {
        bin: Vec<Bin>,
    }
    #[derive(serde::Deserialize)]
    struct Bin {
        name: String,
    }
    let text = std::fs::read_to_string(root().join("fuzz/Cargo.toml")).expect("fuzz/Cargo.toml");
    let manifest: Manifest = toml::from_str(&text).expect("fuzz/Cargo.toml parses");
    let bins: BTreeSet<String> = manifest.bin.into_iter().map(|b| b.name).collect();
    let folders: BTreeSet<String> = std::fs::read_dir(root().join("fuzz/corpus"))
        .expect("fuzz/corpus")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let listed: BTreeSet<String> = TARGETS.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(bins, listed, "fuzz/Cargo.toml's targets and TARGETS differ");
    assert_eq!(folders, listed, "fuzz/corpus's folders and TARGETS differ");
}
