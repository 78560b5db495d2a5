//! Variables kept in registers, piece by piece (`layout::in_registers`): a small `.local`
//! array or a `.param` passed by value whose every access is a plain `ld`/`st` at a constant
//! offset. Each piece is a Cranelift variable holding its bits; its bytes never exist in
//! memory, except where a `.func`'s parameters come in and its return parameters go out.

use super::{Lower, int_type, trusted};
use crate::jit::layout::Piece;
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_frontend::Variable;

impl Lower<'_, '_> {
    /// The variable of piece `offset` of variable `i`, if `i` lives in registers
    /// (`layout::in_registers` admits only accesses that are pieces).
    pub(super) fn piece_var(&self, i: u32, offset: i64) -> Option<Variable> {
        let pieces = self.var_regs[i as usize].as_ref()?;
        let (_, var) = pieces
            .iter()
            .find(|(p, _)| p.offset as i64 == offset)
            .expect("every access to a variable in registers is one of its pieces");
        Some(*var)
    }

    /// Whether variable `i` lives in registers.
    pub(super) fn in_registers(&self, i: u32) -> bool {
        self.var_regs[i as usize].is_some()
    }

    fn pieces(&self, i: u32) -> Vec<(Piece, Variable)> {
        self.var_regs[i as usize].clone().unwrap_or_default()
    }

    /// Sets every piece of variable `i` to zero, as the frame starts.
    pub(super) fn zero_pieces(&mut self, i: u32) {
        for (p, var) in self.pieces(i) {
            let z = self.b.ins().iconst(int_type(8 * p.size), 0);
            self.b.def_var(var, z);
        }
    }

    /// Loads the pieces of variable `i` from its bytes at `at + off` (a `.func`'s argument).
    pub(super) fn load_pieces(&mut self, i: u32, at: Value, off: i32) {
        for (p, var) in self.pieces(i) {
            let v = self.load_value(int_type(8 * p.size), trusted(), at, off + p.offset as i32);
            self.b.def_var(var, v);
        }
    }

    /// Stores the bytes of variable `i` at `at + off` (a `.func`'s return parameter): its
    /// pieces, and zero where no piece is (bytes the frame would hold as it started).
    pub(super) fn store_pieces(&mut self, i: u32, at: Value, off: i32) {
        let mut next = 0;
        for (p, var) in self.pieces(i) {
            self.store_zeros(at, off, next, p.offset);
            let v = self.b.use_var(var);
            self.b.ins().store(trusted(), v, at, off + p.offset as i32);
            next = p.offset + p.size;
        }
        let size = self.f.var(i).size as u32;
        self.store_zeros(at, off, next, size);
    }

    /// Zeroes bytes `from..to` at `at + off`, in the widest naturally aligned stores.
    fn store_zeros(&mut self, at: Value, off: i32, mut from: u32, to: u32) {
        while from < to {
            let size = [8u32, 4, 2, 1]
                .into_iter()
                .find(|&s| from.is_multiple_of(s) && from + s <= to)
                .expect("a one-byte store always fits");
            let z = self.b.ins().iconst(int_type(8 * size), 0);
            self.b.ins().store(trusted(), z, at, off + from as i32);
            from += size;
        }
    }

    /// Variable `i` (at most 8 bytes) as one integer of its width: its pieces, zero between.
    pub(super) fn bits_of_pieces(&mut self, i: u32) -> Value {
        let ty = int_type(8 * self.f.var(i).size as u32);
        let mut bits = self.b.ins().iconst(ty, 0);
        for (p, var) in self.pieces(i) {
            let v = self.b.use_var(var);
            let v = self.resize(v, ty, false);
            let v = match p.offset {
                0 => v,
                k => self.b.ins().ishl_imm_s(v, 8 * k as i64),
            };
            bits = self.b.ins().bor(bits, v);
        }
        bits
    }

    /// Sets the pieces of variable `i` (at most 8 bytes) from one integer of its width.
    pub(super) fn pieces_of_bits(&mut self, i: u32, bits: Value) {
        for (p, var) in self.pieces(i) {
            let v = match p.offset {
                0 => bits,
                k => self.b.ins().ushr_imm_s(bits, 8 * k as i64),
            };
            let v = self.resize(v, int_type(8 * p.size), false);
            self.b.def_var(var, v);
        }
    }
}

/// The variables of a function's pieces, declared in `b`.
pub(super) fn declare(
    b: &mut cranelift_frontend::FunctionBuilder,
    pieces: &[Option<Vec<Piece>>],
) -> Vec<Option<Vec<(Piece, Variable)>>> {
    (pieces.iter())
        .map(|known| {
            known.as_ref().map(|ps| {
                ps.iter()
                    .map(|p| (*p, b.declare_var(int_type(8 * p.size))))
                    .collect()
            })
        })
        .collect()
}
