//! Variables kept in registers piece by piece (`jit::layout::in_registers`): array
//! parameters and return parameters of a `.func` passed by value (a bignum as
//! `.param .b8 a[32]`), and `.local` arrays, read and written only at constant offsets.
//! Results against values worked out here, on every engine and through the host call; the
//! bytes of a return parameter that nothing wrote are zero; and the shape pinned (no frame,
//! so no frame registration even when checked). Variables whose accesses overlap stay in
//! memory and give the same results.

mod common;

use common::{Rng, engines_and_unchecked, jit_with};
use ptxjit::jit::Emit;
use ptxjit::{Arg, Dim3, JitOptions};

const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

/// `mix(a, b)`: a and b are two 16-byte arrays; r (24 bytes) gets
/// r[0..8] = a.lo + b.lo, r[8..12] = low word of b.hi, r[12..16] never written,
/// r[16..24] = a.hi + (high word of b.hi). Vector and scalar accesses of several widths.
const MIX: &str = r#"
.visible .func (.param .align 8 .b8 r[24]) mix(.param .align 8 .b8 a[16], .param .align 8 .b8 b[16])
{
  .reg .u64 %x<4>;
  .reg .u32 %w<2>;
  ld.param.v2.u64 {%x0, %x1}, [a];
  ld.param.u64 %x2, [b];
  ld.param.v2.u32 {%w0, %w1}, [b+8];
  add.u64 %x0, %x0, %x2;
  st.param.u64 [r], %x0;
  cvt.u64.u32 %x3, %w1;
  add.u64 %x1, %x1, %x3;
  st.param.u32 [r+8], %w0;
  st.param.u64 [r+16], %x1;
  ret;
}
"#;

fn mix_want(a: &[u8; 16], b: &[u8; 16]) -> [u8; 24] {
    let word = |s: &[u8], k: usize| u64::from_le_bytes(s[8 * k..8 * k + 8].try_into().unwrap());
    let (a0, a1, b0, b1) = (word(a, 0), word(a, 1), word(b, 0), word(b, 1));
    let mut r = [0u8; 24];
    r[0..8].copy_from_slice(&a0.wrapping_add(b0).to_le_bytes());
    r[8..12].copy_from_slice(&(b1 as u32).to_le_bytes());
    r[16..24].copy_from_slice(&a1.wrapping_add(b1 >> 32).to_le_bytes());
    r
}

/// A kernel calling `mix` on 16-byte pairs of `inp` (32 bytes a thread), 24 bytes out.
fn mix_kernel() -> String {
    format!(
        "{HEAD}{MIX}\
         .visible .entry k(.param .u64 pin, .param .u64 pout)\n{{\n\
         \x20 .reg .u64 %in, %out, %off, %v<3>;\n  .reg .u32 %t;\n\
         \x20 ld.param.u64 %in, [pin];\n  ld.param.u64 %out, [pout];\n\
         \x20 mov.u32 %t, %tid.x;\n  mul.wide.u32 %off, %t, 32;\n  add.u64 %in, %in, %off;\n\
         \x20 mul.wide.u32 %off, %t, 24;\n  add.u64 %out, %out, %off;\n\
         \x20 {{\n\
         \x20 .param .align 8 .b8 pa[16];\n  .param .align 8 .b8 pb[16];\n  .param .align 8 .b8 pr[24];\n\
         \x20 ld.global.v2.u64 {{%v0, %v1}}, [%in];\n  st.param.v2.u64 [pa], {{%v0, %v1}};\n\
         \x20 ld.global.v2.u64 {{%v0, %v1}}, [%in+16];\n  st.param.v2.u64 [pb], {{%v0, %v1}};\n\
         \x20 call.uni (pr), mix, (pa, pb);\n\
         \x20 ld.param.u64 %v0, [pr];\n  ld.param.u64 %v1, [pr+8];\n  ld.param.u64 %v2, [pr+16];\n\
         \x20 st.global.u64 [%out], %v0;\n  st.global.u64 [%out+8], %v1;\n  st.global.u64 [%out+16], %v2;\n\
         \x20 }}\n  ret;\n}}\n"
    )
}

fn random_bytes<const N: usize>(rng: &mut Rng) -> [u8; N] {
    std::array::from_fn(|_| rng.next_u64() as u8)
}

#[test]
fn array_parameters_pass_in_registers() {
    let mut rng = Rng::new(21);
    let threads = 32;
    let input: Vec<u8> = (0..threads * 32).map(|_| rng.next_u64() as u8).collect();
    let ptx = mix_kernel();
    for (name, engine) in engines_and_unchecked(&ptx) {
        let mut inp = input.clone();
        let mut out = vec![0xaau8; threads * 24];
        engine
            .launch(
                "k",
                Dim3::new(1, 1, 1),
                Dim3::new(threads as u32, 1, 1),
                &mut [Arg::Buffer(&mut inp), Arg::Buffer(&mut out)],
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for t in 0..threads {
            let a: [u8; 16] = input[32 * t..32 * t + 16].try_into().unwrap();
            let b: [u8; 16] = input[32 * t + 16..32 * t + 32].try_into().unwrap();
            assert_eq!(
                out[24 * t..24 * t + 24],
                mix_want(&a, &b),
                "{name}: thread {t}"
            );
        }
    }
    // The host call: the arguments read where the caller has them, the return written whole
    // (its unwritten bytes zero), and no frame: even checked, the function calls nothing.
    for checked in [true, false] {
        let options = JitOptions {
            checked,
            emit: Emit::Asm,
            ..JitOptions::default()
        };
        let j = jit_with(&format!("{HEAD}{MIX}"), options);
        let (_, code) = (j.listing.iter())
            .find(|(n, _)| n == "mix")
            .expect("a listing of mix");
        let calls = code.lines().any(|l| l.trim_start().starts_with("call"));
        assert!(!calls, "checked {checked}: mix registers a frame:\n{code}");
        // SAFETY: an array parameter is a pointer to its bytes and an array return an out
        // pointer to them (jit::host); `j` outlives the calls.
        let mix = unsafe {
            std::mem::transmute::<
                *const u8,
                extern "C" fn(*mut [u8; 24], *const [u8; 16], *const [u8; 16]),
            >(j.raw_func("mix").unwrap())
        };
        for _ in 0..200 {
            let (a, b) = (random_bytes::<16>(&mut rng), random_bytes::<16>(&mut rng));
            let mut r = [0x55u8; 24];
            mix(&mut r, &a, &b);
            assert_eq!(r, mix_want(&a, &b), "checked {checked}");
        }
    }
}

/// A kernel with a 32-byte `.local` array: four u32 words written at constant offsets (one
/// v2 store), read back as u32 and v2.u32; `overlap` adds a u64 read of words 0 and 1, so
/// the accesses overlap and the array stays in memory.
fn local_array_kernel(overlap: bool) -> String {
    let extra = if overlap {
        "  ld.local.u64 %d, [t];\n  cvt.u32.u64 %e, %d;\n  add.u32 %s, %s, %e;\n  shr.u64 %d, %d, 32;\n  cvt.u32.u64 %e, %d;\n  xor.b32 %s, %s, %e;\n"
    } else {
        ""
    };
    format!(
        "{HEAD}.visible .entry k(.param .u64 pout)\n{{\n\
         \x20 .local .align 8 .b8 t[32];\n\
         \x20 .reg .u32 %i, %a, %b, %c, %s, %e;\n  .reg .u64 %out, %off, %d;\n\
         \x20 ld.param.u64 %out, [pout];\n  mov.u32 %i, %tid.x;\n\
         \x20 mul.lo.u32 %a, %i, 3;\n  add.u32 %b, %i, 100;\n\
         \x20 st.local.u32 [t+4], %a;\n  st.local.v2.u32 [t+8], {{%b, %i}};\n  st.local.u32 [t+28], 7;\n\
         \x20 ld.local.u32 %s, [t];\n  ld.local.v2.u32 {{%a, %c}}, [t+8];\n  ld.local.u32 %e, [t+4];\n\
         \x20 add.u32 %s, %s, %a;\n  mul.lo.u32 %s, %s, %e;\n  add.u32 %s, %s, %c;\n\
         \x20 ld.local.u32 %e, [t+28];\n  add.u32 %s, %s, %e;\n\
         {extra}\
         \x20 mul.wide.u32 %off, %i, 4;\n  add.u64 %out, %out, %off;\n  st.global.u32 [%out], %s;\n  ret;\n}}\n"
    )
}

/// The model of `local_array_kernel` for thread i: words w0 = 0 (never written), w1 = 3i,
/// w2 = i + 100, w3 = i, w7 = 7.
fn local_array_want(i: u32, overlap: bool) -> u32 {
    let (w0, w1, w2, w3, w7) = (0u32, i.wrapping_mul(3), i + 100, i, 7u32);
    let mut s = w0.wrapping_add(w2).wrapping_mul(w1).wrapping_add(w3) + w7;
    if overlap {
        s = s.wrapping_add(w0) ^ w1;
    }
    s
}

#[test]
fn a_local_array_at_constant_offsets_lives_in_registers() {
    for overlap in [false, true] {
        let ptx = local_array_kernel(overlap);
        let threads = 64u32;
        for (name, engine) in engines_and_unchecked(&ptx) {
            let mut out = vec![0u8; 4 * threads as usize];
            engine
                .launch(
                    "k",
                    Dim3::new(1, 1, 1),
                    Dim3::new(threads, 1, 1),
                    &mut [Arg::Buffer(&mut out)],
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            for i in 0..threads {
                let got = u32::from_le_bytes(out[4 * i as usize..][..4].try_into().unwrap());
                assert_eq!(
                    got,
                    local_array_want(i, overlap),
                    "{name}: overlap {overlap}, thread {i}"
                );
            }
        }
        // In registers, the kernel has no frame: no 32-byte stack slot for `t` in its CLIF.
        let options = JitOptions {
            emit: Emit::Clif,
            lanes: false,
            ..JitOptions::default()
        };
        let j = jit_with(&ptx, options);
        let (_, clif) = (j.listing.iter())
            .find(|(n, _)| n == "k")
            .expect("a listing of k");
        let framed = clif.contains("explicit_slot 32");
        assert_eq!(framed, overlap, "overlap {overlap}:\n{clif}");
    }
}

/// A vector access must be aligned as a whole: `ld.local.v2.u32` at `arr+4` (each word
/// aligned, the pair not) faults in checked mode, as the interpreter reports it, whether
/// the array would otherwise live in registers or not (a load and a store).
#[test]
fn a_misaligned_vector_access_still_faults() {
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 out, .param .u32 how)\n{{\n\
         \x20 .local .align 16 .b8 arr[16];\n  .reg .b64 %p;\n  .reg .b32 %x, %y, %h;\n  .reg .pred %s;\n\
         \x20 ld.param.u64 %p, [out];\n  ld.param.u32 %h, [how];\n  ld.global.u32 %x, [%p];\n\
         \x20 st.local.u32 [arr+8], %x;\n  setp.eq.u32 %s, %h, 0;\n  @%s bra STORE;\n\
         \x20 st.local.u32 [arr+4], %x;\n  ld.local.v2.u32 {{%x, %y}}, [arr+4];\n  bra.uni DONE;\n\
         STORE:\n  st.local.v2.u32 [arr+4], {{%x, %x}};\n  ld.local.u32 %y, [arr+8];\n\
         DONE:\n  add.u32 %x, %x, %y;\n  st.global.u32 [%p], %x;\n  ret;\n}}\n"
    );
    for (name, e) in common::engines(&ptx) {
        for (how, line) in [(0u32, 20), (1, 17)] {
            let mut buf = 5u32.to_le_bytes().to_vec();
            let err = e
                .launch(
                    "k",
                    Dim3::x(1),
                    Dim3::x(1),
                    &mut [Arg::Buffer(&mut buf), Arg::Scalar(ptxjit::Value::u32(how))],
                )
                .expect_err("a misaligned vector access faults");
            let ptxjit::RunError::Fault(f, _) = err else {
                panic!("{name}: not a fault: {err:?}")
            };
            assert_eq!(f.line, line, "{name}: {}", f.message);
            assert!(f.message.contains("misaligned"), "{name}: {}", f.message);
        }
    }
}
