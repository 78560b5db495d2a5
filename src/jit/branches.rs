//! Branches decided when a function is built, made jumps before code generation, and the
//! blocks they leave in a chain merged.
//!
//! Functions compiled without Cranelift's e-graph pass (`opt_level=none`; the pass folds
//! these itself) keep every `brif` as the lowering built it, and the lowering cannot always
//! see a condition's value while it
//! builds: a group function's lane masks reach later blocks through block parameters that
//! the SSA construction resolves only when it seals those blocks. So a tiled product's inner
//! step tested "every lane running" (a constant mask compared with itself) and "any lane
//! running" before each of its loads, a compare and two jumps each.
//!
//! [`fold`] finds the conditions that are constants (integer constants, and comparisons,
//! logic, extensions and selects of constants), turns their `brif`s into `jump`s to the
//! taken side, and lets Cranelift remove what became unreachable and the block parameters
//! that became constant; it repeats while a round folds anything. Then [`merge_chains`]
//! joins each block to the one predecessor that jumps to it. In the tiled product's listing
//! the merged stretches also reload a spilled base once where each of the blocks had
//! reloaded it.

use super::lower::{eval_cc, mask_of, signed};
use cranelift_codegen::ir::{Block, Function, InstructionData, Opcode, Value, ValueDef};
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::{CodegenError, Context};
use std::collections::HashMap;

/// How deep [`constant`] follows a value's operands.
const DEPTH: u32 = 8;

/// Folds the branches on constant conditions of the function in `ctx` (see the module's
/// documentation); returns how many it folded.
pub(super) fn fold(ctx: &mut Context, isa: &dyn TargetIsa) -> Result<usize, CodegenError> {
    let mut folded = 0;
    loop {
        ctx.compute_cfg();
        ctx.compute_domtree();
        ctx.eliminate_unreachable_code(isa)?;
        ctx.remove_constant_phis(isa)?;
        ctx.func.dfg.resolve_all_aliases();
        let now = fold_once(&mut ctx.func);
        if now == 0 {
            merge_chains(&mut ctx.func);
            // `define` verifies the function against these before it recomputes them.
            ctx.compute_cfg();
            ctx.compute_domtree();
            return Ok(folded);
        }
        folded += now;
    }
}

/// Merges each block into its predecessor where that is its only one and ends with a jump to
/// it (as folding leaves them).
fn merge_chains(func: &mut Function) {
    let entry = func.layout.entry_block();
    // Edges into each block; merging keeps every other block's count.
    let mut into: HashMap<Block, usize> = HashMap::new();
    for block in func.layout.blocks() {
        if let Some(last) = func.layout.last_inst(block) {
            let dfg = &func.dfg;
            let calls = dfg.insts[last].branch_destination(&dfg.jump_tables, &dfg.exception_tables);
            for call in calls {
                *into.entry(call.block(&dfg.value_lists)).or_default() += 1;
            }
        }
    }
    let blocks: Vec<Block> = func.layout.blocks().collect();
    for block in blocks {
        if !func.layout.is_block_inserted(block) {
            continue;
        }
        while let Some(last) = func.layout.last_inst(block)
            && let InstructionData::Jump { destination, .. } = func.dfg.insts[last]
        {
            let next = destination.block(&func.dfg.value_lists);
            if into.get(&next) != Some(&1) || next == block || Some(next) == entry {
                break;
            }
            let args: Option<Vec<Value>> = (destination.args(&func.dfg.value_lists))
                .map(|a| a.as_value())
                .collect();
            let Some(args) = args else {
                break;
            };
            func.layout.remove_inst(last);
            let params = func.dfg.block_params(next).to_vec();
            func.dfg.detach_block_params(next);
            for (p, a) in params.into_iter().zip(args) {
                func.dfg.change_to_alias(p, a);
            }
            while let Some(inst) = func.layout.first_inst(next) {
                func.layout.remove_inst(inst);
                func.layout.append_inst(inst, block);
            }
            func.layout.remove_block(next);
        }
    }
    func.dfg.resolve_all_aliases();
}

/// One pass over the function's branches; returns how many it made jumps.
fn fold_once(func: &mut Function) -> usize {
    let mut decided = Vec::new();
    for block in func.layout.blocks() {
        let Some(inst) = func.layout.last_inst(block) else {
            continue;
        };
        if let InstructionData::Brif {
            opcode: Opcode::Brif,
            arg,
            blocks,
        } = func.dfg.insts[inst]
            && let Some(c) = constant(func, arg, DEPTH)
        {
            decided.push((inst, blocks[(c == 0) as usize]));
        }
    }
    for &(inst, destination) in &decided {
        func.dfg.insts[inst] = InstructionData::Jump {
            opcode: Opcode::Jump,
            destination,
        };
    }
    decided.len()
}

/// The bits of integer value `v` (zero-extended from its type) if they are known when the
/// function is built, following at most `depth` operands deep.
fn constant(func: &Function, v: Value, depth: u32) -> Option<u64> {
    let dfg = &func.dfg;
    let v = dfg.resolve_aliases(v);
    let ty = dfg.value_type(v);
    if !ty.is_int() || ty.bits() > 64 || depth == 0 {
        return None;
    }
    let ValueDef::Result(inst, 0) = dfg.value_def(v) else {
        return None;
    };
    let of = |x: Value| constant(func, x, depth - 1);
    let r = match dfg.insts[inst] {
        InstructionData::UnaryImm {
            opcode: Opcode::Iconst,
            imm,
        } => imm.bits() as u64,
        InstructionData::IntCompare {
            opcode: Opcode::Icmp,
            args: [x, y],
            cond,
        } => {
            let width = dfg.value_type(x).bits();
            eval_cc(cond, of(x)?, of(y)?, width) as u64
        }
        InstructionData::Binary {
            opcode,
            args: [x, y],
        } => {
            let op: fn(u64, u64) -> u64 = match opcode {
                Opcode::Band => |a, b| a & b,
                Opcode::Bor => |a, b| a | b,
                Opcode::Bxor => |a, b| a ^ b,
                Opcode::Iadd => u64::wrapping_add,
                Opcode::Isub => u64::wrapping_sub,
                _ => return None,
            };
            op(of(x)?, of(y)?)
        }
        InstructionData::Unary { opcode, arg } => match opcode {
            Opcode::Bnot => !of(arg)?,
            Opcode::Uextend | Opcode::Ireduce => of(arg)?,
            Opcode::Sextend => signed(of(arg)?, dfg.value_type(arg).bits()) as u64,
            _ => return None,
        },
        InstructionData::Ternary {
            opcode: Opcode::Select,
            args: [c, t, f],
        } => of(if of(c)? != 0 { t } else { f })?,
        _ => return None,
    };
    Some(r & mask_of(ty))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cranelift_codegen::ir::condcodes::IntCC;
    use cranelift_codegen::ir::{AbiParam, InstBuilder, Signature, types};
    use cranelift_codegen::isa::CallConv;
    use cranelift_codegen::settings;
    use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};

    fn count(func: &Function, op: Opcode) -> usize {
        (func.layout.blocks())
            .flat_map(|b| func.layout.block_insts(b))
            .filter(|&i| func.dfg.insts[i].opcode() == op)
            .count()
    }

    /// `f(x) = (mask == 0xffff ? x : x + 1)` tested through a mask that reaches the test as
    /// a block parameter, and `x < 7` tested as it is (not a constant), then 3 added.
    fn masked() -> Function {
        let mut sig = Signature::new(CallConv::SystemV);
        sig.params.push(AbiParam::new(types::I32));
        sig.returns.push(AbiParam::new(types::I32));
        let mut func = Function::with_name_signature(Default::default(), sig);
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut func, &mut fctx);
        let [entry, mid, all, some, join, small, big, end] = [(); 8].map(|_| b.create_block());
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let x = b.block_params(entry)[0];
        let every = b.ins().iconst(types::I32, 0xffff);
        b.ins().jump(mid, &[every.into()]);
        b.append_block_param(mid, types::I32);
        b.switch_to_block(mid);
        let mask = b.block_params(mid)[0];
        let full = b.ins().icmp_imm_u(IntCC::Equal, mask, 0xffff);
        b.ins().brif(full, all, &[], some, &[]);
        b.switch_to_block(all);
        b.ins().jump(join, &[x.into()]);
        b.switch_to_block(some);
        let y = b.ins().iadd_imm_s(x, 1);
        b.ins().jump(join, &[y.into()]);
        b.append_block_param(join, types::I32);
        b.switch_to_block(join);
        let v = b.block_params(join)[0];
        let lt = b.ins().icmp_imm_u(IntCC::UnsignedLessThan, v, 7);
        b.ins().brif(lt, small, &[], big, &[]);
        b.switch_to_block(small);
        b.ins().jump(end, &[v.into()]);
        b.switch_to_block(big);
        b.ins().jump(end, &[v.into()]);
        b.append_block_param(end, types::I32);
        b.switch_to_block(end);
        let r = b.block_params(end)[0];
        let r = b.ins().iadd_imm_s(r, 3);
        b.ins().return_(&[r]);
        b.seal_all_blocks();
        b.finalize(isa().frontend_config());
        func
    }

    fn isa() -> cranelift_codegen::isa::OwnedTargetIsa {
        cranelift_native::builder()
            .expect("host ISA")
            .finish(settings::Flags::new(settings::builder()))
            .expect("host ISA")
    }

    #[test]
    fn constant_masks_fold_and_chains_merge() {
        let isa = isa();
        let mut ctx = Context::for_function(masked());
        assert_eq!(count(&ctx.func, Opcode::Brif), 2);
        // The mask's test folds (Cranelift's constant-phi pass, run before the first round,
        // gives it the constant); the test of x stays.
        assert_eq!(fold(&mut ctx, &*isa).expect("folds"), 1);
        assert_eq!(count(&ctx.func, Opcode::Brif), 1);
        assert_eq!(
            count(&ctx.func, Opcode::Iadd),
            1,
            "the untaken side is gone"
        );
        // entry, mid, all and join are one block now; small, big and end stay.
        assert_eq!(ctx.func.layout.blocks().count(), 4);
        ctx.verify(&*isa)
            .expect("valid, with the control-flow graph it keeps");
    }
}
