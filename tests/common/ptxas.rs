//! NVIDIA's assembler for the tests that check what it accepts: found through `$PTXAS`, the
//! pip wheel `nvidia-cuda-nvcc-cu12` (through `python3`) or the PATH. `.ci/run` installs the
//! wheel and sets `PTXJIT_REQUIRE_PTXAS=1`, which turns a missing ptxas into a failure;
//! elsewhere its checks say SKIPPED on stderr and do not run.

use std::path::{Path, PathBuf};
use std::process::Command;

fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let wheel = Command::new("python3")
        .args([
            "-c",
            "import nvidia.cuda_nvcc as m; print(list(m.__path__)[0])",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("bin/ptxas"));
    wheel.filter(|p| p.exists()).or_else(|| {
        Command::new("ptxas")
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from("ptxas"))
    })
}

/// ptxas, or None after saying why `test`'s ptxas checks do not run (a failure when CI
/// requires ptxas).
pub fn require(test: &str) -> Option<PathBuf> {
    let found = find();
    if found.is_none() {
        assert!(
            std::env::var_os("PTXJIT_REQUIRE_PTXAS").is_none(),
            "ptxas not found and PTXJIT_REQUIRE_PTXAS is set"
        );
        eprintln!(
            "{test}: ptxas checks SKIPPED, ptxas not found (pip install nvidia-cuda-nvcc-cu12)"
        );
    }
    found
}

/// Runs ptxas on `text` for `arch`: Ok, or its first error line.
pub fn assemble(ptxas: &Path, text: &str, arch: &str, name: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("ptxjit-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}-{:?}.ptx", std::thread::current().id()));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg(&file)
        .args(["-o", "/dev/null"])
        .output()
        .expect("ptxas runs");
    std::fs::remove_file(&file).ok();
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(err.lines().next().unwrap_or("").to_string())
    }
}

/// Each kernel's static shared bytes as `ptxas -v` reports them (`N bytes smem`, 0 where it
/// says none), by kernel name; or ptxas's first error line.
#[allow(dead_code)] // Not every test that includes this module asks for it.
pub fn smem_bytes(
    ptxas: &Path,
    text: &str,
    arch: &str,
    name: &str,
) -> Result<Vec<(String, u32)>, String> {
    let dir = std::env::temp_dir().join(format!("ptxjit-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}-v-{:?}.ptx", std::thread::current().id()));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(ptxas)
        .args([&format!("-arch={arch}"), "-v"])
        .arg(&file)
        .args(["-o", "/dev/null"])
        .output()
        .expect("ptxas runs");
    std::fs::remove_file(&file).ok();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(err.lines().next().unwrap_or("").to_string());
    }
    let mut kernels: Vec<(String, u32)> = Vec::new();
    for line in err.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("");
            kernels.push((name.to_string(), 0));
        } else if let (Some(k), Some(used)) = (kernels.last_mut(), line.split(" bytes smem").next())
            && line.contains(" bytes smem")
        {
            let n = used.rsplit(' ').next().unwrap_or("");
            k.1 = n
                .parse()
                .unwrap_or_else(|_| panic!("ptxas -v says `{line}`"));
        }
    }
    Ok(kernels)
}
