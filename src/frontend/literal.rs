//! Numeric literals (PTX ISA 4.5): integers in decimal, hex, octal and binary; floats as
//! `0fXXXXXXXX`, `0dXXXXXXXXXXXXXXXX` or decimal.

use crate::ast::Imm;

/// Parses an integer literal as the grammar matched it (optional `-`, base prefix, `U` suffix).
pub fn parse_int(text: &str) -> Option<i128> {
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let body = body.trim_end_matches(['U', 'u']);
    let value = if let Some(hex) = body.strip_prefix("0x").or(body.strip_prefix("0X")) {
        u128::from_str_radix(hex, 16).ok()?
    } else if let Some(bin) = body.strip_prefix("0b").or(body.strip_prefix("0B")) {
        u128::from_str_radix(bin, 2).ok()?
    } else if body.len() > 1 && body.starts_with('0') {
        u128::from_str_radix(&body[1..], 8).ok()?
    } else {
        body.parse::<u128>().ok()?
    };
    // Literals beyond 64 bits are out of range for every PTX type; keep them representable so
    // the range check can name them.
    let value = i128::try_from(value).ok()?;
    Some(if neg { -value } else { value })
}

/// Parses a float literal.
pub fn parse_float(text: &str) -> Option<Imm> {
    if let Some(hex) = text.strip_prefix("0f").or(text.strip_prefix("0F")) {
        return u32::from_str_radix(hex, 16).ok().map(Imm::F32);
    }
    if let Some(hex) = text.strip_prefix("0d").or(text.strip_prefix("0D")) {
        return u64::from_str_radix(hex, 16).ok().map(Imm::F64);
    }
    text.parse::<f64>().ok().map(|v| Imm::F64(v.to_bits()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_in_every_base() {
        assert_eq!(parse_int("42"), Some(42));
        assert_eq!(parse_int("-42"), Some(-42));
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("017"), Some(15));
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("4294967295U"), Some(4294967295));
        assert_eq!(parse_int("0xffffffffffffffff"), Some(u64::MAX as i128));
    }

    #[test]
    fn floats_hex_and_decimal() {
        assert_eq!(parse_float("0f3F800000"), Some(Imm::F32(0x3f80_0000)));
        assert_eq!(
            parse_float("0d3FF0000000000000"),
            Some(Imm::F64(0x3ff0_0000_0000_0000))
        );
        assert_eq!(parse_float("1.5"), Some(Imm::F64(1.5f64.to_bits())));
        assert_eq!(parse_float("-2e3"), Some(Imm::F64((-2000.0f64).to_bits())));
    }
}
