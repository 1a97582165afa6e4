//! Builds the shim hyoka embeds: `hyoka-shim-static` for the host's musl target, statically
//! linked and stripped, written to `$OUT_DIR/hyoka-shim.image` (empty when it cannot be had).
//!
//! hyoka starts two shims per trial, and a dynamically linked glibc program costs about 1 ms
//! of CPU per exec on a virtual machine (the loader and glibc's `CPUID` probing, which traps),
//! a static musl one 0.13 ms. Without the musl target (`rustup target add
//! x86_64-unknown-linux-musl`), or with `HYOKA_EMBED_SHIM=0`, the image is empty and hyoka
//! starts the `hyoka-shim` beside it, as before. The build uses its own target directory
//! beside the outer one, so it runs once and is then a no-op until the shim's sources change.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-env-changed=HYOKA_EMBED_SHIM");
    for source in ["../proctrack", "../shim-static", "../../Cargo.lock"] {
        println!("cargo::rerun-if-changed={source}");
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let image = out.join("hyoka-shim.image");
    let built = match build_static_shim(&out) {
        Ok(built) => built,
        Err(why) => {
            println!("cargo::warning=hyoka starts its shim from the file beside it: {why}");
            None
        }
    };
    let bytes = built.map(std::fs::read).transpose().unwrap_or_else(|e| {
        println!("cargo::warning=cannot read the static shim: {e}");
        None
    });
    std::fs::write(&image, bytes.unwrap_or_default()).expect("write the shim image");
}

/// The static shim's path, `None` when it is not to be built here (not wanted, not Linux,
/// no musl target installed), or why building it failed.
fn build_static_shim(out: &Path) -> Result<Option<PathBuf>, String> {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    if var("HYOKA_EMBED_SHIM") == "0" || var("CARGO_CFG_TARGET_OS") != "linux" {
        return Ok(None);
    }
    let arch = var("CARGO_CFG_TARGET_ARCH");
    let triple = format!("{arch}-unknown-linux-musl");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run rustc: {e}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_owned();
    if !Path::new(&sysroot)
        .join("lib/rustlib")
        .join(&triple)
        .is_dir()
    {
        return Ok(None);
    }
    let manifest = Path::new(&var("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let target_dir = shared_target_dir(out).join("static-shim");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--release", "--offline", "--locked", "--quiet"])
        .args(["-p", "hyoka-shim-static", "--target", &triple])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
        .env("CARGO_PROFILE_RELEASE_STRIP", "symbols");
    // The outer build's settings for its own target (flags, a clippy or coverage wrapper)
    // are not this build's.
    for name in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTDOCFLAGS",
    ] {
        build.env_remove(name);
    }
    // Cargo would read what this build printed as directives to the outer one.
    let status = build
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building it for {triple} failed ({status})"));
    }
    Ok(Some(
        target_dir.join(&triple).join("release/hyoka-shim-static"),
    ))
}

/// The outer build's target directory (the ancestor of `OUT_DIR` cargo marked with
/// `CACHEDIR.TAG`), so that every profile shares one static build; else `OUT_DIR` itself.
fn shared_target_dir(out: &Path) -> PathBuf {
    out.ancestors()
        .find(|dir| dir.join("CACHEDIR.TAG").is_file())
        .unwrap_or(out)
        .to_path_buf()
}
