//! Names this build of the sources for the calls between the Worker and its
//! Durable Objects (`objects::protocol`): they travel in postcard, by position, so
//! a Worker and an object of two builds, as while a deployment rolls out, must
//! refuse each other's calls rather than misread them. Every Rust source counts,
//! not only the protocols': a type a call carries may be anywhere, and a call
//! refused for a few seconds is better than one misread.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    files.sort();
    // FNV-1a, 64 bits, over each file's path and contents, each with its length
    // first, and over the features built (the test hooks add calls): the same
    // sources give the same name on any machine.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut add = |bytes: &[u8]| {
        for &byte in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in files {
        let path: Vec<String> = file
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect();
        add(path.join("/").as_bytes());
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        add(text.replace("\r\n", "\n").as_bytes());
    }
    let mut features: Vec<String> = std::env::vars()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("CARGO_FEATURE_"))
        .collect();
    features.sort();
    add(features.join(",").as_bytes());
    println!("cargo:rustc-env=GREYLIST_BUILD={hash:016x}");
}

/// Every `*.rs` file under `dir`: an editor's lock or backup file beside them
/// names no code.
fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
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
