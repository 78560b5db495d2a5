//! What a module offers its host: every function's name, kind and parameters, as plain values
//! (what the C ABI, the driver API and the Python package list and check arguments against),
//! without reaching into the AST.

use crate::ast::{FuncKind, Function, Module, Param, Type};

/// One parameter or return value of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: String,
    /// The element type (`.u64`, `.f32`, `.b8` for a byte array).
    pub ty: Type,
    /// Size in bytes: the type's size, or more for an array parameter (`.param .b8 p[24]`).
    pub size: usize,
    /// Alignment in bytes (`.align`, or the type's size).
    pub align: u32,
}

impl ParamInfo {
    /// Whether it is an array (a structure passed by value), not one scalar.
    pub fn is_array(&self) -> bool {
        self.size != self.ty.bytes()
    }
}

/// One function of a module: an `.entry` (a kernel) or a `.func`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    pub name: String,
    pub kind: FuncKind,
    pub params: Vec<ParamInfo>,
    /// Return values (`.func` only), in order.
    pub returns: Vec<ParamInfo>,
    /// A prototype without a body can be neither called nor launched.
    pub has_body: bool,
}

impl FunctionInfo {
    fn of(f: &Function) -> FunctionInfo {
        let info = |p: &Param| {
            let ty = f.param_type(p);
            let align = match p {
                Param::Mem(crate::ast::VarId::Function(i)) => f.var(*i).align,
                _ => ty.bytes() as u32,
            };
            ParamInfo {
                name: f.param_name(p).to_string(),
                ty,
                size: f.param_size(p),
                align: align.max(1),
            }
        };
        FunctionInfo {
            name: f.name.clone(),
            kind: f.kind,
            params: f.params.iter().map(info).collect(),
            returns: f.rets.iter().map(info).collect(),
            has_body: f.body.is_some(),
        }
    }

    /// The byte offset of each parameter in a packed parameter buffer laid out as CUDA's
    /// `CU_LAUNCH_PARAM_BUFFER_POINTER` expects (each at its alignment), and the total size.
    pub fn param_offsets(&self) -> (Vec<usize>, usize) {
        let mut offsets = Vec::with_capacity(self.params.len());
        let mut end = 0usize;
        for p in &self.params {
            let align = p.align as usize;
            let off = end.div_ceil(align) * align;
            offsets.push(off);
            end = off + p.size;
        }
        (offsets, end)
    }
}

impl Module {
    /// Every function of the module, in the order of the source.
    pub fn signatures(&self) -> Vec<FunctionInfo> {
        self.functions.iter().map(FunctionInfo::of).collect()
    }
    /// The function named `name`, if the module has one.
    pub fn signature(&self, name: &str) -> Option<FunctionInfo> {
        self.function(name).map(|(_, f)| FunctionInfo::of(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_kernels_and_functions_with_their_parameters() {
        let m = Module::parse(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .visible .func (.reg .u32 r) add1(.reg .u32 a) { add.u32 r, a, 1; ret; }\n\
             .visible .entry k(.param .u64 p, .param .align 8 .b8 s[12], .param .f32 x) { ret; }\n\
             .extern .func (.reg .u64 r) proto(.reg .u16 a);\n",
        )
        .unwrap();
        let sigs = m.signatures();
        assert_eq!(sigs.len(), 3);
        assert_eq!(sigs[0].name, "add1");
        assert_eq!(sigs[0].kind, FuncKind::Func);
        assert_eq!(sigs[0].returns[0].ty, Type::U32);
        assert_eq!(sigs[0].params[0].size, 4);
        let k = &sigs[1];
        assert_eq!(k.kind, FuncKind::Entry);
        let names: Vec<&str> = k.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["p", "s", "x"]);
        assert!(k.params[1].is_array() && !k.params[0].is_array());
        assert_eq!((k.params[1].size, k.params[1].align), (12, 8));
        // p at 0, s at 8 (align 8) to 20, x at 20 (align 4): 24 bytes.
        assert_eq!(k.param_offsets(), (vec![0, 8, 20], 24));
        assert!(!sigs[2].has_body);
        assert_eq!(m.signature("k").as_ref(), Some(k));
        assert_eq!(m.signature("nope"), None);
    }
}
