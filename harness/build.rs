//! Embeds the commit the binary was built from (the GPU machine has no git history), and
//! links GCC's unwinder statically so that the release binary needs nothing beyond glibc's
//! own libraries on the GPU machine (the binary built here is the one carried there).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    static_unwinder();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=10", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!(
        "cargo:rustc-env=GPU_MATCH_COMMIT={commit}{}",
        if dirty { "-dirty" } else { "" }
    );
    // A commit moves HEAD's branch (its loose ref, or packed-refs once packed); a checkout
    // moves HEAD. The index is not watched: `git status` rewrites it, and the rebuild of
    // the binary that followed every git command took minutes.
    let mut watched = Vec::new();
    watched.extend(git(&["rev-parse", "--git-path", "HEAD"]));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git(&["rev-parse", "--git-path", &branch]));
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched {
        // A watched path that does not exist would rerun this script at every build.
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    // An edit to the sources after the last commit must turn the stamp `-dirty` (a stamp
    // read only when HEAD or the index moved once labelled a binary built from an edited
    // tree with the clean commit before the edit).
    for dir in SOURCES {
        println!("cargo:rerun-if-changed=../{dir}");
    }
}

/// The workspace's source folders and files, watched for edits (the binary's own sources
/// and every crate it links; not `target/` or `results/`).
const SOURCES: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "gpu-kernels/src",
    "gpu-kernels/selftest",
    "ccm/src",
    "ccm/kernels",
    "clcb/src",
    "clcb/kernels",
    "xml-twig/src",
    "xml-twig/kernels",
    "ddm-region/src",
    "ddm-region/kernels",
    "baselines/src",
    "harness/src",
    "harness/build.rs",
];

/// Rust's standard library on `*-linux-gnu` links `-lgcc_s` (the shared unwinder). The
/// linker searches the directories of `cargo:rustc-link-search` before the system ones,
/// so a `libgcc_s.a` there that is GCC's static unwinder (`libgcc_eh.a`) is taken instead
/// of `libgcc_s.so.1`. Where the C compiler cannot name `libgcc_eh.a` nothing changes and
/// the binary keeps the shared unwinder.
fn static_unwinder() {
    println!("cargo:rerun-if-env-changed=GPU_MATCH_SHARED_LIBGCC");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.ends_with("-linux-gnu") || std::env::var_os("GPU_MATCH_SHARED_LIBGCC").is_some() {
        return;
    }
    let Some(eh) = Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_absolute() && p.is_file())
    else {
        return;
    };
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    let dir = out.join("static-unwinder");
    if std::fs::create_dir_all(&dir).is_ok() && std::fs::copy(&eh, dir.join("libgcc_s.a")).is_ok() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
}
