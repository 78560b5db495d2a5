//! Checked table lookups through a base register plus a bounded index
//! (`jit/lower/bounded.rs`): once the whole span of the index has passed for a base value,
//! later accesses with that base skip their own test. Whatever the span, every access must
//! still fault exactly where and as the interpreter says (a table shorter than the index's
//! span, a misaligned base, a base that changes between lookups), and the results of lookups
//! that stay inside are worked out here.

mod common;

use common::engines;
use ptxjit::{Arg, Dim3, Engine, RunError, Value};

const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

/// Thread t sums `n` lookups `table[(t + j) & 255]` (u32, the index scaled by a `mul.wide`
/// of the kind given), from a second table for odd j when `two` is set; writes the sum.
fn lookup_kernel(mul: &str) -> String {
    format!(
        r#"{HEAD}
.visible .entry look(.param .u64 ta, .param .u64 tb, .param .u64 out, .param .u32 n, .param .u32 two)
{{
  .reg .b32 %t, %j, %i, %v, %sum, %n, %two, %odd;
  .reg .b64 %a, %b, %o, %x, %p, %base;
  .reg .pred %more, %alt;
  ld.param.u64 %a, [ta];
  ld.param.u64 %b, [tb];
  ld.param.u64 %o, [out];
  ld.param.u32 %n, [n];
  ld.param.u32 %two, [two];
  mov.u32 %t, %tid.x;
  mov.u32 %j, 0;
  mov.u32 %sum, 0;
  setp.eq.u32 %more, %n, 0;
  @%more bra DONE;
LOOP:
  and.b32 %odd, %j, 1;
  and.b32 %odd, %odd, %two;
  setp.ne.u32 %alt, %odd, 0;
  mov.u64 %base, %a;
  @%alt mov.u64 %base, %b;
  add.u32 %i, %t, %j;
  and.b32 %i, %i, 255;
  {mul} %x, %i, 4;
  add.s64 %p, %base, %x;
  ld.global.u32 %v, [%p];
  add.u32 %sum, %sum, %v;
  add.u32 %j, %j, 1;
  setp.lt.u32 %more, %j, %n;
  @%more bra LOOP;
DONE:
  mul.wide.u32 %x, %t, 4;
  add.s64 %o, %o, %x;
  st.global.u32 [%o], %sum;
  ret;
}}
"#
    )
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Launches `look` with tables `a` and `b` on one block of `threads`.
fn launch(
    e: &dyn Engine,
    a: &[u32],
    b: &[u32],
    n: u32,
    two: bool,
    threads: u32,
) -> Result<Vec<u32>, RunError> {
    let mut ta = words(a);
    let mut tb = words(b);
    let mut out = vec![0u8; 4 * threads as usize];
    let mut args = [
        Arg::Buffer(&mut ta),
        Arg::Buffer(&mut tb),
        Arg::Buffer(&mut out),
        Arg::Scalar(Value::u32(n)),
        Arg::Scalar(Value::u32(two as u32)),
    ];
    e.launch("look", Dim3::x(1), Dim3::x(threads), &mut args)?;
    Ok(out
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

fn table(len: usize) -> Vec<u32> {
    (0..len as u32)
        .map(|k| k.wrapping_mul(0x9e37_79b9) ^ 0x5bd1)
        .collect()
}

/// The sums thread t writes, worked out here.
fn sums(a: &[u32], b: &[u32], n: u32, two: bool, threads: u32) -> Vec<u32> {
    (0..threads)
        .map(|t| {
            (0..n).fold(0u32, |s, j| {
                let tab = if two && j % 2 == 1 { b } else { a };
                s.wrapping_add(tab[((t + j) & 255) as usize])
            })
        })
        .collect()
}

#[test]
fn lookups_inside_the_table_give_its_words() {
    for mul in ["mul.wide.u32", "mul.wide.s32"] {
        let ptx = lookup_kernel(mul);
        let (a, b) = (table(256), table(300));
        for (name, e) in engines(&ptx) {
            for two in [false, true] {
                let got = launch(e.as_ref(), &a, &b, 40, two, 64).unwrap();
                assert_eq!(got, sums(&a, &b, 40, two, 64), "{name} {mul} two={two}");
            }
        }
    }
}

#[test]
fn a_table_shorter_than_the_span_works_until_an_index_leaves_it() {
    // 160 words: the span (256 words) does not fit, so no base is proved; lookups below
    // 160 succeed, the first at 160 or above faults where the interpreter says.
    let ptx = lookup_kernel("mul.wide.u32");
    let (a, b) = (table(160), table(256));
    let mut faults = Vec::new();
    for (name, e) in engines(&ptx) {
        // Thread t reads (t + j) & 255 for j < 20: threads up to 140 stay inside.
        let got = launch(e.as_ref(), &a, &b, 20, false, 128).unwrap();
        assert_eq!(got, sums(&a, &b, 20, false, 128), "{name}");
        let err = launch(e.as_ref(), &a, &b, 20, false, 160).unwrap_err();
        let RunError::Fault(f, _) = &err else {
            panic!("{name}: a fault expected, got {err}")
        };
        // Thread 141 is the first whose 20th lookup (index 160) leaves the table.
        assert_eq!(f.tid, [141, 0, 0], "{name}: {err}");
        faults.push((name, f.line, strip(&f.message)));
    }
    for w in faults.windows(2) {
        assert_eq!(w[0].1, w[1].1, "{} and {} disagree", w[0].0, w[1].0);
        assert_eq!(w[0].2, w[1].2, "{} and {} disagree", w[0].0, w[1].0);
    }
}

#[test]
fn a_second_base_is_tested_on_its_own() {
    // Table a is whole and proved first; b is short: lookups through b fault though the
    // same access instruction passed its proved base just before.
    let ptx = lookup_kernel("mul.wide.u32");
    let (a, b) = (table(256), table(100));
    let mut faults = Vec::new();
    for (name, e) in engines(&ptx) {
        let err = launch(e.as_ref(), &a, &b, 30, true, 96).unwrap_err();
        let RunError::Fault(f, _) = &err else {
            panic!("{name}: a fault expected, got {err}")
        };
        // Thread 71's lookup j = 29 (odd, table b) reads index 100.
        assert_eq!(f.tid, [71, 0, 0], "{name}: {err}");
        faults.push((name, f.line, strip(&f.message)));
    }
    for w in faults.windows(2) {
        assert_eq!(
            (w[0].1, &w[0].2),
            (w[1].1, &w[1].2),
            "{} / {}",
            w[0].0,
            w[1].0
        );
    }
}

#[test]
fn a_misaligned_base_faults_at_its_first_access() {
    // The table's base is the buffer's start plus 2: every u32 lookup is misaligned.
    let ptx = lookup_kernel("mul.wide.u32").replace(
        "ld.param.u64 %a, [ta];",
        "ld.param.u64 %a, [ta];\n  add.u64 %a, %a, 2;",
    );
    let mut faults = Vec::new();
    for (name, e) in engines(&ptx) {
        let err = launch(e.as_ref(), &table(260), &table(4), 3, false, 1).unwrap_err();
        let RunError::Fault(f, _) = &err else {
            panic!("{name}: a fault expected, got {err}")
        };
        assert!(f.message.contains("misaligned"), "{name}: {err}");
        faults.push((name, f.line, strip(&f.message)));
    }
    for w in faults.windows(2) {
        assert_eq!(
            (w[0].1, &w[0].2),
            (w[1].1, &w[1].2),
            "{} / {}",
            w[0].0,
            w[1].0
        );
    }
}

/// A fault's message without its host addresses (the engines place buffers differently).
fn strip(m: &str) -> String {
    m.split_whitespace()
        .filter(|w| !w.starts_with("0x"))
        .collect::<Vec<_>>()
        .join(" ")
}
