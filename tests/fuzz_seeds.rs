//! The fuzzing targets' checks (`fuzz/checks/`), run natively on every input
//! kept for them: the seeds (`fuzz/seeds/<target>/`) and whatever a fuzzing run
//! found that failed once (`fuzz/artifacts/<target>/`, kept as the proof of its
//! mending). `make fuzz` explores beyond them, on demand.

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
    let targets: Vec<String> = fs::read_dir(fuzz.join("fuzz_targets"))
        .unwrap()
        .map(|file| file.unwrap().path())
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    assert_eq!(
        targets.len(),
        TARGETS.len(),
        "each fuzzing target's check is replayed here: {targets:?}"
    );
    for (name, check) in TARGETS {
        let mut replayed = 0;
        for kept in ["seeds", "artifacts"] {
            let Ok(files) = fs::read_dir(fuzz.join(kept).join(name)) else {
                continue;
            };
            for file in files {
                let path = file.unwrap().path();
                // Shown with a failing check's panic: which input it was.
                println!("{name}: {}", path.display());
                check(&fs::read(&path).unwrap());
                replayed += 1;
            }
        }
        assert!(replayed > 0, "the target {name} has no seed to replay");
    }
}
