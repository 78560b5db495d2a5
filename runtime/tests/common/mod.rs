//! Paths the runtime's tests share: the built shared library, `libcuda.so.1` beside it, and
//! the repository's files.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>`: where cargo put the shared library this test run built.
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// `libptxjit_runtime.so`, built first: `cargo test` builds the crate's library as an rlib
/// only, so the shared library comes from `cargo build` of the same profile (once for all
/// the tests of a run; a no-op when it is up to date).
pub fn library() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let dir = target_dir();
    BUILT.call_once(|| {
        let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cargo.args(["build", "-p", "ptxjit-runtime", "--lib"]);
        if dir.file_name().is_some_and(|p| p == "release") {
            cargo.arg("--release");
        }
        let target = dir.parent().expect("target/<profile>");
        run(cargo.arg("--target-dir").arg(target).current_dir(repo()));
    });
    let lib = dir.join("libptxjit_runtime.so");
    assert!(lib.exists(), "{} was not built", lib.display());
    lib
}

/// A directory holding `libcuda.so.1` (and `libcuda.so`, for linking) as links to the
/// shared library: what `LD_LIBRARY_PATH` names for programs that load CUDA's driver.
pub fn cuda_dir() -> PathBuf {
    let lib = library();
    let dir = target_dir().join("cuda");
    std::fs::create_dir_all(&dir).expect("create target/<profile>/cuda");
    for name in ["libcuda.so.1", "libcuda.so"] {
        let link = dir.join(name);
        if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&lib, &link).expect("link libcuda.so.1");
        }
    }
    dir
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The runtime crate's directory.
pub fn runtime() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs a command, failing the test with its output unless it succeeds; returns stdout.
pub fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A fresh scratch directory under the target directory.
pub fn scratch(name: &str) -> PathBuf {
    let dir = target_dir().join("runtime-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// The C compiler: `$CC`, or `cc`.
pub fn cc() -> Command {
    Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
}
