//! `include/ptxjit.h` declares exactly the functions the library exports under `ptxjit_`
//! (and `ptx_run`), and its codes are the library's.

use ptxjit_runtime::capi;
use std::collections::BTreeSet;

fn header() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/ptxjit.h")).unwrap()
}

/// Names followed by `(` that start with `prefix`, in `text`.
fn called(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if tail[end..].starts_with('(') {
            names.insert(tail[..end].to_string());
        }
        rest = &tail[end..];
    }
    names
}

#[test]
fn the_header_declares_every_exported_function() {
    let src = |f: &str| {
        std::fs::read_to_string(format!("{}/src/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap()
    };
    let rust = src("capi.rs") + &src("ocelot.rs");
    let exported: BTreeSet<String> = rust
        .split("#[unsafe(no_mangle)]")
        .skip(1)
        .filter_map(|item| {
            let at = item.find("fn ")?;
            let name: String = item[at + 3..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            Some(name)
        })
        .collect();
    let mut declared = called(&header(), "ptxjit_");
    declared.extend(called(&header(), "ptx_run"));
    assert_eq!(declared, exported);
}

#[test]
fn the_header_codes_are_the_library_codes() {
    let h = header();
    let value = |name: &str| -> i64 {
        let line = h
            .lines()
            .find(|l| l.starts_with(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("{name} is not defined"));
        let v = line
            .split_whitespace()
            .nth(2)
            .unwrap()
            .trim_end_matches('u');
        v.parse().unwrap()
    };
    for (name, code) in [
        ("PTXJIT_OK", capi::PTXJIT_OK),
        (
            "PTXJIT_ERROR_INVALID_ARGUMENT",
            capi::PTXJIT_ERROR_INVALID_ARGUMENT,
        ),
        ("PTXJIT_ERROR_PARSE", capi::PTXJIT_ERROR_PARSE),
        ("PTXJIT_ERROR_COMPILE", capi::PTXJIT_ERROR_COMPILE),
        ("PTXJIT_ERROR_USAGE", capi::PTXJIT_ERROR_USAGE),
        ("PTXJIT_ERROR_FAULT", capi::PTXJIT_ERROR_FAULT),
        ("PTXJIT_ERROR_INTERNAL", capi::PTXJIT_ERROR_INTERNAL),
    ] {
        assert_eq!(value(name), code as i64, "{name}");
    }
    assert_eq!(
        value("PTXJIT_LOAD_UNCHECKED"),
        capi::PTXJIT_LOAD_UNCHECKED as i64
    );
}
