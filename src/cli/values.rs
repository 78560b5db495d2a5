//! Values on the command line: scalars typed by a PTX parameter, and `launch`'s argument
//! SPECs (`TYPE:VALUE`, `TYPE[]:V1,V2`, `TYPE[]:@PATH`, `TYPE[N]`, and for `diff`
//! `TYPE:random`, `TYPE[N]:random`).

use crate::ast::{Type, TypeKind};
use crate::diff::Input;
use crate::engine::Value;
use rustc_apfloat::ieee::{Half, Single};
use rustc_apfloat::{Float, FloatConvert, Round};
use std::fmt;

/// Parses one scalar of type `ty`: integers in decimal (negative for signed types) or `0x`
/// hex; floats in decimal or as PTX hex bits `0fXXXXXXXX` / `0dXXXXXXXXXXXXXXXX` (an f16 as
/// `0xXXXX`).
pub fn parse_value(ty: Type, text: &str) -> Result<Value, String> {
    let bad = || format!("`{text}` is not a valid {ty} value");
    match ty.kind() {
        TypeKind::Float => {
            let bits = if let Some(h) = text.strip_prefix("0f").or(text.strip_prefix("0F")) {
                if ty != Type::F32 || h.len() != 8 {
                    return Err(format!("`{text}`: 0f takes 8 hex digits and is for .f32"));
                }
                u64::from_str_radix(h, 16).map_err(|_| bad())?
            } else if let Some(h) = text.strip_prefix("0d").or(text.strip_prefix("0D")) {
                if ty != Type::F64 || h.len() != 16 {
                    return Err(format!("`{text}`: 0d takes 16 hex digits and is for .f64"));
                }
                u64::from_str_radix(h, 16).map_err(|_| bad())?
            } else if ty == Type::F16 {
                half_bits(text).ok_or_else(bad)?
            } else if ty.bits() == 32 && ty != Type::F32 {
                // A pair of halves: its bits, 0x and 8 hex digits (element 0 in the low half).
                match text.strip_prefix("0x").or(text.strip_prefix("0X")) {
                    Some(h) if h.len() == 8 => u64::from_str_radix(h, 16).map_err(|_| bad())?,
                    _ => {
                        return Err(format!(
                            "`{text}`: a {ty} value is its bits, 0x and 8 hex digits"
                        ));
                    }
                }
            } else if ty == Type::F32 {
                text.parse::<f32>().map_err(|_| bad())?.to_bits() as u64
            } else {
                text.parse::<f64>().map_err(|_| bad())?.to_bits()
            };
            Ok(Value::new(ty, bits))
        }
        _ => {
            let (neg, body) = match text.strip_prefix('-') {
                Some(b) => (true, b),
                None => (false, text),
            };
            let mag = if let Some(h) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
                u128::from_str_radix(h, 16).map_err(|_| bad())?
            } else {
                if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad());
                }
                body.parse::<u128>().map_err(|_| bad())?
            };
            let bits = ty.bits();
            if neg {
                if !ty.is_signed() {
                    return Err(format!(
                        "`{text}`: negative values need a signed type, not {ty}"
                    ));
                }
                if mag > 1u128 << (bits - 1) {
                    return Err(format!("`{text}` is out of range for {ty}"));
                }
                Ok(Value::new(ty, (mag as u64).wrapping_neg()))
            } else {
                if mag > ty.mask() as u128 {
                    return Err(format!("`{text}` is out of range for {ty}"));
                }
                Ok(Value::new(ty, mag as u64))
            }
        }
    }
}

/// An f16's bits from `0x` and 4 hex digits (as the hex format prints them) or from a
/// decimal, rounded to the nearest f16 (ties to even).
fn half_bits(text: &str) -> Option<u64> {
    if let Some(h) = text.strip_prefix("0x").or(text.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().filter(|_| h.len() == 4);
    }
    let h = Half::from_str_r(text, Round::NearestTiesToEven).ok()?;
    Some(h.value.to_bits() as u64)
}

/// A `launch` or `diff` argument as given on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// A scalar, or a buffer with its initial bytes.
    Given(Input),
    /// `TYPE:random`: a new edge-biased value each run (`diff`).
    RandomScalar(Type),
    /// `TYPE[N]:random`: N new edge-biased elements each run (`diff`).
    RandomBuffer { ty: Type, n: usize },
}

fn spec_type(s: &str) -> Result<Type, String> {
    match Type::from_ptx(s) {
        Some(t) if t.kind() != TypeKind::Pred && t != Type::F16 => Ok(t),
        _ => Err(format!(
            "unknown argument type `{s}` (use u8…u64, s8…s64, b8…b64, f32, f64)"
        )),
    }
}

/// Parses a SPEC; `@PATH` files are read here.
pub fn parse_spec(spec: &str) -> Result<Spec, String> {
    let (head, value) = match spec.split_once(':') {
        Some((h, v)) => (h, Some(v)),
        None => (spec, None),
    };
    let Some(open) = head.find('[') else {
        let ty = spec_type(head)?;
        let v = value.ok_or_else(|| format!("`{spec}`: a scalar needs a value, as in {head}:5"))?;
        if v == "random" {
            return Ok(Spec::RandomScalar(ty));
        }
        return Ok(Spec::Given(Input::Scalar(parse_value(ty, v)?)));
    };
    let ty = spec_type(&head[..open])?;
    let count = head[open + 1..]
        .strip_suffix(']')
        .ok_or_else(|| format!("`{spec}`: missing `]`"))?;
    if !count.is_empty() {
        let n: usize = count
            .parse()
            .map_err(|_| format!("`{spec}`: bad element count `{count}`"))?;
        if n.checked_mul(ty.bytes()).is_none_or(|b| b > 1 << 34) {
            return Err(format!("`{spec}`: buffer too large"));
        }
        match value {
            Some("random") => return Ok(Spec::RandomBuffer { ty, n }),
            Some(_) => {
                return Err(format!(
                    "`{spec}`: give either a count or values, as in {ty}[]:1,2"
                ));
            }
            None => {}
        }
        return Ok(Spec::Given(Input::Buffer {
            ty,
            bytes: vec![0; n * ty.bytes()],
        }));
    }
    let value = value.ok_or_else(|| format!("`{spec}`: a buffer needs values or a count"))?;
    let bytes = if let Some(path) = value.strip_prefix('@') {
        let b = std::fs::read(path).map_err(|e| format!("`{spec}`: cannot read {path}: {e}"))?;
        if b.len() % ty.bytes() != 0 {
            return Err(format!(
                "`{spec}`: {path} has {} bytes, not a multiple of {}",
                b.len(),
                ty.bytes()
            ));
        }
        b
    } else {
        let mut b = Vec::new();
        for v in value.split(',').filter(|s| !s.is_empty()) {
            b.extend(parse_value(ty, v.trim())?.to_le_bytes());
        }
        b
    };
    Ok(Spec::Given(Input::Buffer { ty, bytes }))
}

/// How `call` and `launch` print values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// exact bits: integers as 0x and the type's width in hex digits, f32 and f64 as PTX's
    /// 0f/0d hex bits (f16 as 0x and 4 digits), preds as 0/1
    #[default]
    Hex,
    /// decimal: integers plain (signed types signed), floats as the shortest decimal that
    /// reads back to the same value (nan, -nan, inf, -inf, -0 as such), preds as 0/1
    Dec,
}

/// A value as `format` prints it. Both forms read back as `call` arguments and SPEC values
/// (a NaN's payload aside, in decimal).
pub fn format_value(v: Value, format: Format) -> String {
    if format == Format::Hex {
        return v.to_string();
    }
    let width = v.ty.bits();
    match v.ty.kind() {
        TypeKind::Pred | TypeKind::Bits | TypeKind::Unsigned => v.bits.to_string(),
        TypeKind::Signed => (((v.bits << (64 - width)) as i64) >> (64 - width)).to_string(),
        TypeKind::Float => {
            let negative = v.bits >> (width - 1) == 1;
            match v.ty {
                Type::F32 => decimal(f32::from_bits(v.bits as u32), negative),
                Type::F64 => decimal(f64::from_bits(v.bits), negative),
                Type::F16 => half_decimal(v.bits, negative),
                // Pairs of halves print as their bits in both formats.
                _ => v.to_string(),
            }
        }
    }
}

/// A float in decimal: the shortest digits that read back to the same value (Rust's `{}`,
/// and `{:e}` below 1e-4 and from 1e16 on, where `{}` would write long runs of zeros).
fn decimal<F: Into<f64> + Copy + fmt::Display + fmt::LowerExp>(x: F, negative: bool) -> String {
    let wide: f64 = x.into();
    let magnitude = wide.abs();
    if wide.is_nan() {
        if negative { "-nan" } else { "nan" }.into()
    } else if magnitude.is_finite() && magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// An f16 in decimal: the fewest significant digits (at most 5) that round back to it.
fn half_decimal(bits: u64, negative: bool) -> String {
    let half = Half::from_bits(bits as u128);
    let single: Single = half.convert(&mut false).value;
    let exact = f32::from_bits(single.to_bits() as u32);
    if !exact.is_finite() {
        return decimal(exact, negative);
    }
    (0..5)
        .map(|precision| format!("{exact:.precision$e}"))
        .find(|digits| {
            Half::from_str_r(digits, Round::NearestTiesToEven)
                .is_ok_and(|h| h.value.to_bits() == half.to_bits())
        })
        .and_then(|digits| digits.parse::<f64>().ok())
        .map_or_else(|| decimal(exact, negative), |x| decimal(x, negative))
}

/// A buffer's contents as typed values separated by spaces.
pub fn format_buffer(ty: Type, bytes: &[u8], format: Format) -> String {
    bytes
        .chunks(ty.bytes())
        .map(|c| format_value(Value::from_le_bytes(ty, c), format))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        assert_eq!(parse_value(Type::S32, "-1").unwrap().bits, 0xffff_ffff);
        assert_eq!(parse_value(Type::U8, "0xff").unwrap().bits, 0xff);
        assert!(parse_value(Type::U8, "256").is_err());
        assert!(parse_value(Type::U32, "-1").is_err());
        assert!(parse_value(Type::S8, "-129").is_err());
        assert_eq!(parse_value(Type::S8, "-128").unwrap().bits, 0x80);
        assert_eq!(parse_value(Type::F32, "1.5").unwrap().bits, 0x3fc0_0000);
        assert_eq!(
            parse_value(Type::F32, "0f3fc00000").unwrap().bits,
            0x3fc0_0000
        );
        assert_eq!(
            parse_value(Type::F64, "0d3ff8000000000000").unwrap().bits,
            0x3ff8_0000_0000_0000
        );
        assert!(parse_value(Type::F32, "0d3ff8000000000000").is_err());
        // f16: 0.1 rounds to 0x2e66 (0.0999755859375); 65520, halfway between 65504 and
        // 65536, rounds to even: infinity.
        assert_eq!(parse_value(Type::F16, "1.5").unwrap().bits, 0x3e00);
        assert_eq!(parse_value(Type::F16, "0.1").unwrap().bits, 0x2e66);
        assert_eq!(parse_value(Type::F16, "-65520").unwrap().bits, 0xfc00);
        assert_eq!(parse_value(Type::F16, "0x3c00").unwrap().bits, 0x3c00);
        assert!(parse_value(Type::F16, "0x3c0").is_err());
        assert!(parse_value(Type::F16, "1.5x").is_err());
        assert_eq!(
            parse_value(Type::F16x2, "0x3c004000").unwrap().bits,
            0x3c00_4000
        );
        assert!(parse_value(Type::F16x2, "1.5").is_err());
        assert_eq!(
            format_value(Value::new(Type::F16x2, 0x3c00_4000), Format::Dec),
            "0x3c004000"
        );
    }

    #[test]
    fn decimal_switches_to_the_exponent_form_outside_1e_minus_4_to_1e16() {
        let dec = |v| format_value(v, Format::Dec);
        assert_eq!(dec(Value::f64(0.0001)), "0.0001");
        assert_eq!(dec(Value::f64(0.00009)), "9e-5");
        assert_eq!(dec(Value::f64(9999999999999998.0)), "9999999999999998");
        assert_eq!(dec(Value::f64(1e16)), "1e16");
        assert_eq!(dec(Value::f64(-0.0)), "-0");
        assert_eq!(dec(Value::f32(16777216.0)), "16777216");
        assert_eq!(dec(Value::new(Type::S16, 0x8000)), "-32768");
        assert_eq!(dec(Value::new(Type::Pred, 1)), "1");
        assert_eq!(dec(Value::new(Type::F16, 0x7e01)), "nan");
        assert_eq!(
            format_value(Value::new(Type::F16, 0x7e01), Format::Hex),
            "0x7e01"
        );
    }

    #[test]
    fn specs() {
        assert_eq!(
            parse_spec("u32:7").unwrap(),
            Spec::Given(Input::Scalar(Value::u32(7)))
        );
        assert_eq!(
            parse_spec("u16[]:1,2").unwrap(),
            Spec::Given(Input::Buffer {
                ty: Type::U16,
                bytes: vec![1, 0, 2, 0]
            })
        );
        assert_eq!(
            parse_spec("f32[2]").unwrap(),
            Spec::Given(Input::Buffer {
                ty: Type::F32,
                bytes: vec![0; 8]
            })
        );
        assert_eq!(
            parse_spec("s64:random").unwrap(),
            Spec::RandomScalar(Type::S64)
        );
        assert_eq!(
            parse_spec("f32[3]:random").unwrap(),
            Spec::RandomBuffer {
                ty: Type::F32,
                n: 3
            }
        );
        assert!(parse_spec("q32:1").is_err());
        assert!(parse_spec("u32[").is_err());
    }
}
