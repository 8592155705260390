//! Names the shape of the calls between the Worker and its Durable Objects
//! (`objects::protocol`): they travel in postcard, by position, so a Worker and
//! an object whose calls differ, as between the two steps of a deployment
//! (docs/operations.md, "Upgrade"), must refuse each other's calls rather than
//! misread them. The name covers every source that can shape a call, not only
//! the protocols: a type a call carries may be anywhere below the objects'
//! handlers, and a call refused for a few seconds is better than one misread. It
//! leaves out what cannot: the HTTP layer, `lib.rs`, and the objects' handlers
//! and clients, so a deployment that changes only those keeps the two Workers
//! talking. The dependencies' versions count too (Cargo.lock: serde's and
//! postcard's own encoding). tests/call_shape.rs proves that nothing the name
//! covers uses what it leaves out.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.lock");
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    files.sort();
    // FNV-1a, 64 bits, over each file's path and contents, each with its length
    // first, over Cargo.lock, and over the test hooks (they add calls): the same
    // sources give the same name on any machine, and the two halves of one build
    // the same name.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut add = |bytes: &[u8]| {
        for &byte in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in files {
        let path = relative(&file);
        if !shapes_the_calls(&path) {
            continue;
        }
        add(path.as_bytes());
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        add(text.replace("\r\n", "\n").as_bytes());
    }
    let lock = std::fs::read_to_string("Cargo.lock").expect("Cargo.lock reads");
    add(lock.replace("\r\n", "\n").as_bytes());
    let hooks = std::env::var_os("CARGO_FEATURE_TEST_HOOKS").is_some();
    add(if hooks { b"test-hooks" } else { b"" });
    println!("cargo:rustc-env=GREYLIST_BUILD={hash:016x}");
}

/// The modules that cannot shape a call, wherever they stand: the HTTP layer,
/// and the objects' handlers (`object`), clients and start. `lib.rs` is the one
/// file left out besides.
pub const LEFT_OUT: [&str; 4] = ["http", "object", "client", "startup"];

/// Whether a source, by its path under `src/` (`http/route.rs`), can shape a
/// call or an answer between the Worker and its objects.
pub fn shapes_the_calls(path: &str) -> bool {
    let module = path.strip_suffix(".rs").unwrap_or(path);
    path != "lib.rs" && !module.split('/').any(|part| LEFT_OUT.contains(&part))
}

/// `file`'s path under `src/`, its parts joined by `/` on any system.
pub fn relative(file: &Path) -> String {
    let parts: Vec<String> = file
        .strip_prefix("src")
        .unwrap_or(file)
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// Every `*.rs` file under `dir`: an editor's lock or backup file beside them
/// names no code.
pub fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ reads") {
        let path = entry.expect("src/ lists").path();
        if path.is_dir() {
            sources(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs")
            && !path.is_symlink()
            && !path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(".#"))
        {
            files.push(path);
        }
    }
}
