//! NVIDIA's assembler as the judge of what is PTX: every PTX file in the repository and a
//! sample of the random generator's programs (each of its three shapes) are accepted by
//! ptxas and by us; a table of malformed forms is rejected by both, ours with a located
//! error.
//!
//! ptxas comes from the pip wheel `nvidia-cuda-nvcc-cu12` (no GPU needed); `.ci/run`
//! installs it and sets `PTXJIT_REQUIRE_PTXAS=1`, which turns a missing ptxas into a
//! failure. Elsewhere a missing ptxas makes each test say so on stderr and return.

use ptxjit::Module;
use ptxjit::generate::{Rng, array_program, coop_program, program};
use std::path::{Path, PathBuf};
use std::process::Command;

/// ptxas: `$PTXAS`, the pip wheel's copy (through `python3`), or `ptxas` on the PATH.
fn ptxas() -> Option<PathBuf> {
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
    if let Some(p) = wheel.filter(|p| p.exists()) {
        return Some(p);
    }
    Command::new("ptxas")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("ptxas"))
}

/// ptxas, or None after saying why the test does not run (a failure when CI requires it).
fn require_ptxas(test: &str) -> Option<PathBuf> {
    let found = ptxas();
    if found.is_none() {
        assert!(
            std::env::var_os("PTXJIT_REQUIRE_PTXAS").is_none(),
            "ptxas not found and PTXJIT_REQUIRE_PTXAS is set"
        );
        eprintln!("{test}: SKIPPED, ptxas not found (pip install nvidia-cuda-nvcc-cu12)");
    }
    found
}

/// Runs ptxas on `text` for `arch`: Ok, or its first error line.
fn assemble(ptxas: &Path, text: &str, arch: &str, name: &str) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("ptxjit-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.ptx"));
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

fn repository_ptx(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() && !name.starts_with('.') && name != "target" {
            repository_ptx(&path, out);
        } else if name.ends_with(".ptx") {
            out.push(path);
        }
    }
}

#[test]
fn every_ptx_file_in_the_repository_is_ptx_to_both() {
    let Some(ptxas) = require_ptxas("every_ptx_file_in_the_repository_is_ptx_to_both") else {
        return;
    };
    let mut files = Vec::new();
    repository_ptx(Path::new(env!("CARGO_MANIFEST_DIR")), &mut files);
    assert!(files.len() >= 30, "found only {} PTX files", files.len());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy();
        if let Err(e) = assemble(&ptxas, &text, "sm_90", &name) {
            panic!("ptxas rejects {}: {e}", f.display());
        }
        if let Err(e) = Module::parse_named(&text, &f.display().to_string()) {
            panic!("we reject {}:\n{e}", f.display());
        }
    }
}

#[test]
fn generated_programs_are_ptx_to_ptxas() {
    let Some(ptxas) = require_ptxas("generated_programs_are_ptx_to_ptxas") else {
        return;
    };
    let mut rng = Rng::new(4242);
    for i in 0..30 {
        let (kind, p) = match i % 3 {
            0 => ("per-thread", program(&mut rng, 60)),
            1 => ("array", array_program(&mut rng, 30)),
            _ => ("cooperative", coop_program(&mut rng, 40)),
        };
        let text = p.ptx();
        if let Err(e) = assemble(&ptxas, &text, "sm_90", &format!("gen{i}")) {
            panic!("ptxas rejects {kind} program {i}: {e}\n{text}");
        }
    }
}

#[test]
fn malformed_forms_are_rejected_by_both() {
    let Some(ptxas) = require_ptxas("malformed_forms_are_rejected_by_both") else {
        return;
    };
    let wrap = |line: &str| {
        format!(
            ".version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n  \
             .reg .b32 %a, %b, %c, %d;\n  .reg .b64 %rd;\n  .reg .f32 %f;\n  .reg .pred %p;\n  \
             {line}\n  ret;\n}}\n"
        )
    };
    // The wrapper itself, with a valid line, is PTX to both.
    let valid = wrap("lop3.b32 %d, %a, %b, %c, 0x96;");
    assemble(&ptxas, &valid, "sm_90", "valid").unwrap();
    Module::parse(&valid).unwrap();
    for line in [
        "sad.b32 %d, %a, %b, %c;",
        "mad24.lo.sat.s32 %d, %a, %b, %c;",
        "mul24.s32 %d, %a, %b;",
        "bfind.b32 %d, %a;",
        "bmsk.b32 %d, %a, %b;",
        "szext.clamp.b32 %d, %a, %b;",
        "dp4a.u32.b32 %d, %a, %b, %c;",
        "lop3.b32 %d, %a, %b, %c, %a;",
        "lop3.xor.b32 %d|%p, %a, %b, %c, 1, %p;",
        "cvt.pack.sat.u8.s32 %d, %a, %b;",
        "testp.normal.f16 %p, %a;",
        "prefetch.shared.L1 [%rd];",
        "nanosleep.u32 %rd;",
        "ldu.shared.u32 %a, [%rd];",
        "mov.u32 %a, %clock64;",
        "add.u32 %d, %a;",
        "mul.u32 %d, %a, %b;",
        "shf.l.b32 %d, %a, %b, %c;",
        "bar.sync;",
    ] {
        let text = wrap(line);
        assert!(
            assemble(&ptxas, &text, "sm_90", "bad").is_err(),
            "ptxas accepts `{line}`"
        );
        let e = Module::parse(&text).expect_err(line).to_string();
        assert!(
            e.contains("<input>:10:"),
            "`{line}` is not located on its line:\n{e}"
        );
    }
}
