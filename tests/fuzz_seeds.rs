//! The fuzzing targets' checks (`fuzz/checks/`), run natively on every seed kept
//! for them (`fuzz/seeds/<target>/`, where an input a fuzzing run found failing
//! goes once it is mended). `make fuzz` explores beyond them, on demand.

use std::fs;
use std::path::Path;

#[path = "../fuzz/checks/authorization.rs"]
mod authorization;
#[path = "../fuzz/checks/bulk.rs"]
mod bulk;
#[path = "../fuzz/checks/feed_query.rs"]
mod feed_query;
#[path = "../fuzz/checks/form_and_token.rs"]
mod form_and_token;
#[path = "../fuzz/checks/import.rs"]
mod import;
#[path = "../fuzz/checks/snapshot.rs"]
mod snapshot;

type Check = fn(&[u8]);

const TARGETS: [(&str, Check); 6] = [
    ("authorization", authorization::check),
    ("bulk", bulk::check),
    ("feed_query", feed_query::check),
    ("form_and_token", form_and_token::check),
    ("import", import::check),
    ("snapshot", snapshot::check),
];

#[test]
fn every_kept_input_passes_its_targets_check() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut targets: Vec<String> = fs::read_dir(fuzz.join("fuzz_targets"))
        .unwrap()
        .map(|file| file.unwrap().path())
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    targets.sort();
    let replayed: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        targets, replayed,
        "each fuzzing target's check is replayed here, and no other"
    );
    for (name, check) in TARGETS {
        let mut seeds = 0;
        for file in fs::read_dir(fuzz.join("seeds").join(name)).unwrap() {
            let path = file.unwrap().path();
            // Shown with a failing check's panic: which seed it was.
            println!("{name}: {}", path.display());
            check(&fs::read(&path).unwrap());
            seeds += 1;
        }
        assert!(seeds > 0, "the target {name} has no seed to replay");
    }
}
