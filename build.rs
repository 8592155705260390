//! Names this build of the sources for the calls between the Worker and its
//! Durable Objects (`objects::protocol`): they travel in postcard, by position, so
//! a Worker and an object of two builds, as while a deployment rolls out, must
//! refuse each other's calls rather than misread them.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    sources(Path::new("src"), &mut files);
    files.sort();
    // FNV-1a, 64 bits, over each file's path and contents: the same sources give
    // the same name on any machine.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        let contents = std::fs::read(&file).expect("a source file reads");
        for byte in file.to_string_lossy().bytes().chain(contents) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=GREYLIST_BUILD={hash:016x}");
}

fn sources(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ reads") {
        let path = entry.expect("src/ lists").path();
        if path.is_dir() {
            sources(&path, files);
        } else {
            files.push(path);
        }
    }
}
