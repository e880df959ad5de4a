//! The build-time PTX builder: a crate's `build.rs` calls [`compile_kernels`].
//!
//! It compiles the crate's kernel sub-crate with the nightly toolchain for
//! `nvptx64-nvidia-cuda` (`-Zbuild-std=core`, `--emit=asm`), refuses PTX that still
//! references external functions (it would not load), and writes `$OUT_DIR/kernels.ptx`
//! for the crate to embed with `include_str!`.
//!
//! Cargo reruns it when the kernel sources or the device prelude change, and when the
//! toolchain state it depends on changes: rust-src added to or removed from the nightly
//! toolchain, nightly installed or updated (the files rustup rewrites then are watched),
//! so that `rustup component add rust-src --toolchain nightly` after a build without it
//! enables the GPU engines at the next build (`scripts/rust-src-rerun.sh` shows it).
//!
//! Environment:
//! - `GPU_MATCH_SM` — the GPU architecture (`sm_80` by default: the driver JIT-compiles
//!   sm_80 PTX for Ampere, Hopper and newer).
//! - `GPU_MATCH_REQUIRE_PTX=1` — fail the build when the PTX cannot be built (CI sets it
//!   when rust-src is installed). Otherwise a missing nightly or rust-src is a cargo
//!   warning, `kernels.ptx` is empty, and the GPU engines report
//!   [`GpuError::PtxNotBuilt`](crate::GpuError::PtxNotBuilt) at run time, with the fix.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The command that installs what the PTX build needs.
pub const FIX: &str = "rustup component add rust-src --toolchain nightly";

/// Builds `<CARGO_MANIFEST_DIR>/<kernels_dir>` to PTX into `$OUT_DIR/kernels.ptx`.
///
/// Call it from `build.rs`: `gpu_kernels::build::compile_kernels("kernels");`
pub fn compile_kernels(kernels_dir: &str) {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("run from build.rs"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("run from build.rs"));
    let kernels = manifest.join(kernels_dir);
    let out = out_dir.join("kernels.ptx");
    println!("cargo:rerun-if-changed={}", kernels.join("src").display());
    println!(
        "cargo:rerun-if-changed={}",
        kernels.join("Cargo.toml").display()
    );
    // The device prelude is part of every kernel crate.
    println!(
        "cargo:rerun-if-changed={}",
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src").display()
    );
    println!("cargo:rerun-if-env-changed=GPU_MATCH_SM");
    println!("cargo:rerun-if-env-changed=GPU_MATCH_REQUIRE_PTX");
    println!("cargo:rerun-if-env-changed=RUSTUP_HOME");
    let require = std::env::var("GPU_MATCH_REQUIRE_PTX").is_ok_and(|v| v == "1");
    let sm = std::env::var("GPU_MATCH_SM").unwrap_or_else(|_| "sm_80".to_string());

    let sysroot = nightly_sysroot();
    for path in toolchain_state(sysroot.as_ref().ok()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    match sysroot.and_then(|sysroot| build_ptx(&sysroot, &kernels, &out_dir, &sm)) {
        Ok(ptx) => {
            std::fs::write(&out, ptx).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
        }
        Err(why) => {
            if require {
                panic!(
                    "PTX build of {} failed (GPU_MATCH_REQUIRE_PTX=1):\n{why}",
                    kernels.display()
                );
            }
            for line in why.lines().take(20) {
                println!("cargo:warning={line}");
            }
            println!("cargo:warning=GPU engines of this crate are disabled; to enable them: {FIX}");
            std::fs::write(&out, "").unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
        }
    }
}

/// The shared directory for nested PTX builds: beside the outer build's profile
/// directory (`target/nvptx-kernels`), so that `core` is built once for all crates.
fn ptx_target_dir(out_dir: &Path) -> PathBuf {
    // OUT_DIR = <target>/[<triple>/]<profile>/build/<pkg>-<hash>/out
    out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .and_then(|profile| profile.parent())
        .map(|target| target.join("nvptx-kernels"))
        .unwrap_or_else(|| out_dir.join("nvptx-kernels"))
}

/// The nightly toolchain's sysroot, or why there is none.
fn nightly_sysroot() -> Result<PathBuf, String> {
    let sysroot = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--print", "sysroot"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .map_err(|e| {
            format!("cannot run rustup ({e}): the PTX build needs rustup's nightly toolchain")
        })?;
    if !sysroot.status.success() {
        return Err(format!(
            "no nightly toolchain: {}\ninstall it with `rustup toolchain install nightly`, then {FIX}",
            String::from_utf8_lossy(&sysroot.stderr).trim()
        ));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&sysroot.stdout).trim(),
    ))
}

/// The files whose change means the PTX build may now go otherwise (cargo reruns the
/// build script when one changes): the nightly sysroot's list of installed components,
/// which rustup rewrites when rust-src (or any component) is added or removed and when
/// the toolchain is updated; and, without a nightly toolchain, rustup's record of the
/// channels it installed, written when nightly is installed. Only paths that exist are
/// given (cargo reruns a script whose watched path is missing at every build).
fn toolchain_state(sysroot: Option<&PathBuf>) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    if let Some(sysroot) = sysroot {
        paths.push(sysroot.join("lib/rustlib/components"));
    }
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".rustup")));
    if let Some(home) = rustup_home {
        paths.push(home.join("update-hashes"));
    }
    paths.retain(|p| p.exists());
    paths
}

fn build_ptx(sysroot: &Path, kernels: &Path, out_dir: &Path, sm: &str) -> Result<String, String> {
    if !sysroot.join("lib/rustlib/src/rust/library/core").is_dir() {
        return Err(format!(
            "the nightly toolchain has no rust-src component: {FIX}"
        ));
    }

    let target_dir = ptx_target_dir(out_dir);
    let mut cmd = Command::new("rustup");
    cmd.args([
        "run",
        "nightly",
        "cargo",
        "rustc",
        "--release",
        "--target",
        "nvptx64-nvidia-cuda",
    ])
    .args(["-Zbuild-std=core", "--manifest-path"])
    .arg(kernels.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_dir)
    .args(["--", "--emit=asm"]);
    // The outer cargo's variables would make the nested build use the stable toolchain,
    // the outer target directory (and its lock), or the outer flags.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        let outer = (k.starts_with("CARGO") && k != "CARGO_HOME")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || k == "RUSTFLAGS"
            || k == "RUSTUP_TOOLCHAIN"
            || k == "MAKEFLAGS"
            || k == "MFLAGS";
        if outer {
            cmd.env_remove(k.as_ref());
        }
    }
    cmd.env(
        "RUSTFLAGS",
        format!("-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu={sm} -Ccodegen-units=1 -Cdebuginfo=0"),
    );
    let output = cmd
        .output()
        .map_err(|e| format!("cannot run the nested cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "kernel crate {} does not compile for nvptx64:\n{}",
            kernels.display(),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let ptx_path = find_ptx(&target_dir, kernels)?;
    let ptx = std::fs::read_to_string(&ptx_path)
        .map_err(|e| format!("reading {}: {e}", ptx_path.display()))?;
    check_ptx(&ptx).map_err(|e| format!("{}: {e}", ptx_path.display()))?;
    Ok(ptx)
}

/// The newest `.s` file of the kernel crate under `deps/`.
fn find_ptx(target_dir: &Path, kernels: &Path) -> Result<PathBuf, String> {
    let manifest =
        std::fs::read_to_string(kernels.join("Cargo.toml")).map_err(|e| e.to_string())?;
    let name = manifest
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("name")
                .map(|r| r.trim_start_matches([' ', '=']).trim_matches('"'))
        })
        .ok_or("kernel crate's Cargo.toml has no name")?
        .replace('-', "_");
    let deps = target_dir.join("nvptx64-nvidia-cuda/release/deps");
    let prefix = format!("{name}-");
    std::fs::read_dir(&deps)
        .map_err(|e| format!("{}: {e}", deps.display()))?
        .filter_map(Result::ok)
        .filter(|e| {
            let f = e.file_name();
            let f = f.to_string_lossy();
            f.starts_with(&prefix) && f.ends_with(".s")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .ok_or_else(|| format!("no {prefix}*.s under {}", deps.display()))
}

/// Refuses PTX that would not load: unresolved external functions.
pub fn check_ptx(ptx: &str) -> Result<(), String> {
    if let Some(line) = ptx.lines().find(|l| l.contains(".extern .func")) {
        return Err(format!(
            "the PTX references an external function (it will not load): `{}`; \
             a core function was not inlined (float formatting or a panic path?)",
            line.trim()
        ));
    }
    Ok(())
}
