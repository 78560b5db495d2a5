//! The typed AST: the one contract between the front end and both engines.
//!
//! Every modifier is an enum; operands are resolved to register ids, variable ids, label ids
//! and function ids by the front end, which also checks each instruction's legal modifier set
//! and operand types. Engines never see a string modifier and never re-validate.

use std::fmt;

/// A byte range in the module's source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

/// Declares a modifier enum with its PTX spelling (without the leading dot).
macro_rules! modifier_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// The modifier as PTX spells it, without the dot.
            pub fn ptx(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            /// Parses the modifier text (without the dot).
            pub fn from_ptx(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, ".{}", self.ptx())
            }
        }
    };
}

modifier_enum! {
    /// PTX fundamental types (PTX ISA 5.2.1).
    Type {
        Pred = "pred",
        B8 = "b8", B16 = "b16", B32 = "b32", B64 = "b64",
        U8 = "u8", U16 = "u16", U32 = "u32", U64 = "u64",
        S8 = "s8", S16 = "s16", S32 = "s32", S64 = "s64",
        F16 = "f16", F32 = "f32", F64 = "f64",
        BF16 = "bf16", F16x2 = "f16x2", BF16x2 = "bf16x2",
    }
}

/// The kind of a fundamental type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeKind {
    Pred,
    Bits,
    Unsigned,
    Signed,
    Float,
}

impl Type {
    /// Width in bits, by variant (in `Type::ALL` order). Tables, not matches: the
    /// interpreter's semantics functions ask for these on nearly every instruction.
    const BITS: [u8; 19] = [
        1, 8, 16, 32, 64, 8, 16, 32, 64, 8, 16, 32, 64, 16, 32, 64, 16, 32, 32,
    ];
    const KINDS: [TypeKind; 19] = {
        use TypeKind::*;
        [
            Pred, Bits, Bits, Bits, Bits, Unsigned, Unsigned, Unsigned, Unsigned, Signed, Signed,
            Signed, Signed, Float, Float, Float, Float, Float, Float,
        ]
    };

    #[inline]
    pub fn bits(self) -> u32 {
        Type::BITS[self as usize] as u32
    }
    /// Size in memory, in bytes (a predicate is not addressable; 1 for completeness).
    pub fn bytes(self) -> usize {
        (self.bits() as usize).div_ceil(8)
    }
    #[inline]
    pub fn kind(self) -> TypeKind {
        Type::KINDS[self as usize]
    }
    #[inline]
    pub fn is_signed(self) -> bool {
        self.kind() == TypeKind::Signed
    }
    pub fn is_float(self) -> bool {
        self.kind() == TypeKind::Float
    }
    /// The half-precision types (PTX ISA 5.2.1, "alternate floating-point data formats"):
    /// `.f16 .bf16` and their packed pairs `.f16x2 .bf16x2`.
    pub fn is_half(self) -> bool {
        matches!(self, Type::F16 | Type::BF16 | Type::F16x2 | Type::BF16x2)
    }
    /// A packed pair's element type (`.f16x2` → `.f16`); other types are their own.
    pub fn element(self) -> Type {
        match self {
            Type::F16x2 => Type::F16,
            Type::BF16x2 => Type::BF16,
            t => t,
        }
    }
    /// Integer types: bit-size, unsigned and signed.
    pub fn is_int(self) -> bool {
        matches!(
            self.kind(),
            TypeKind::Bits | TypeKind::Unsigned | TypeKind::Signed
        )
    }
    /// Mask of the type's bits within a u64.
    #[inline]
    pub fn mask(self) -> u64 {
        u64::MAX >> (64 - self.bits())
    }
    /// The result type of `mul.wide`/`mad.wide`: twice as wide, same signedness (16- and
    /// 32-bit integer types; others are returned unchanged).
    pub fn widened(self) -> Type {
        use Type::*;
        match self {
            U16 => U32,
            U32 => U64,
            S16 => S32,
            S32 => S64,
            t => t,
        }
    }
    /// The unsigned type of the same width (pred stays pred).
    pub fn unsigned(self) -> Type {
        match self.bits() {
            8 => Type::U8,
            16 => Type::U16,
            32 => Type::U32,
            64 => Type::U64,
            _ => self,
        }
    }
}

modifier_enum! {
    /// State spaces (PTX ISA 5.1).
    Space {
        Reg = "reg", Param = "param", Global = "global", Local = "local",
        Shared = "shared", Const = "const",
    }
}

modifier_enum! {
    /// Comparison operators of `setp`, `slct` and `vset` (PTX ISA 9.7.7.1 tables 26–27).
    CmpOp {
        Eq = "eq", Ne = "ne", Lt = "lt", Le = "le", Gt = "gt", Ge = "ge",
        Lo = "lo", Ls = "ls", Hi = "hi", Hs = "hs",
        Equ = "equ", Neu = "neu", Ltu = "ltu", Leu = "leu", Gtu = "gtu", Geu = "geu",
        Num = "num", Nan = "nan",
    }
}

impl CmpOp {
    /// Operators that apply to integer (and bit-size) types.
    pub fn is_int(self) -> bool {
        use CmpOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | Lo | Ls | Hi | Hs)
    }
    /// Whether the operator compares values of type `ty` (PTX ISA 9.7.7.1 tables 26–27):
    /// float operators on floats, `eq`/`ne` on bit-size types, integer ones on integers.
    pub fn applies_to(self, ty: Type) -> bool {
        if ty.is_float() {
            self.is_float()
        } else if ty.kind() == TypeKind::Bits {
            matches!(self, CmpOp::Eq | CmpOp::Ne)
        } else {
            self.is_int()
        }
    }
    /// Operators that apply to floating-point types.
    pub fn is_float(self) -> bool {
        use CmpOp::*;
        matches!(
            self,
            Eq | Ne | Lt | Le | Gt | Ge | Equ | Neu | Ltu | Leu | Gtu | Geu | Num | Nan
        )
    }
}

modifier_enum! {
    /// Boolean combine operation of `setp` (`.and .or .xor`).
    BoolOp { And = "and", Or = "or", Xor = "xor" }
}

modifier_enum! {
    /// Floating-point rounding modifiers (PTX ISA 9.7.3, 9.7.9.21).
    Rounding { Rn = "rn", Rz = "rz", Rm = "rm", Rp = "rp" }
}

modifier_enum! {
    /// Integer rounding modifiers of `cvt` (round to an integral value).
    IntRounding { Rni = "rni", Rzi = "rzi", Rmi = "rmi", Rpi = "rpi" }
}

impl IntRounding {
    /// The same direction as a float rounding mode.
    pub fn direction(self) -> Rounding {
        match self {
            IntRounding::Rni => Rounding::Rn,
            IntRounding::Rzi => Rounding::Rz,
            IntRounding::Rmi => Rounding::Rm,
            IntRounding::Rpi => Rounding::Rp,
        }
    }
}

modifier_enum! {
    /// `mul`/`mad` integer result selection.
    MulMode { Lo = "lo", Hi = "hi", Wide = "wide" }
}

impl MulMode {
    /// The type of the result of `mul`/`mad` on `ty`: twice as wide for `.wide`.
    pub fn result_type(self, ty: Type) -> Type {
        if self == MulMode::Wide {
            ty.widened()
        } else {
            ty
        }
    }
}

modifier_enum! {
    /// Special registers (PTX ISA 10).
    SpecialRegKind {
        Tid = "tid", Ntid = "ntid", Ctaid = "ctaid", Nctaid = "nctaid",
        Laneid = "laneid", Warpid = "warpid", Nwarpid = "nwarpid",
        LanemaskEq = "lanemask_eq", LanemaskLe = "lanemask_le", LanemaskLt = "lanemask_lt",
        LanemaskGe = "lanemask_ge", LanemaskGt = "lanemask_gt",
        DynamicSmemSize = "dynamic_smem_size", TotalSmemSize = "total_smem_size",
        Clock = "clock", ClockHi = "clock_hi", Clock64 = "clock64",
        Globaltimer = "globaltimer", GlobaltimerLo = "globaltimer_lo",
        GlobaltimerHi = "globaltimer_hi",
    }
}

impl SpecialRegKind {
    /// The register's width: 64 for `%clock64` and `%globaltimer`, 32 for the others.
    pub fn bits(self) -> u32 {
        match self {
            SpecialRegKind::Clock64 | SpecialRegKind::Globaltimer => 64,
            _ => 32,
        }
    }
    /// Whether it reads a clock (a value that changes while a thread runs).
    pub fn is_clock(self) -> bool {
        use SpecialRegKind::*;
        matches!(
            self,
            Clock | ClockHi | Clock64 | Globaltimer | GlobaltimerLo | GlobaltimerHi
        )
    }
}

/// A special register read, e.g. `%tid.x` (dimension 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpecialReg {
    pub kind: SpecialRegKind,
    /// 0, 1, 2 for .x .y .z; 0 for scalar registers.
    pub dim: u8,
}

modifier_enum! {
    /// Sub-word selectors of video instructions (PTX ISA 9.7.18.1).
    Selector { B0 = "b0", B1 = "b1", B2 = "b2", B3 = "b3", H0 = "h0", H1 = "h1" }
}

impl Selector {
    /// Bit position and width of the part a selector picks out of a 32-bit word (`None`:
    /// the whole word).
    pub fn bits_of(sel: Option<Selector>) -> (u32, u32) {
        match sel {
            None => (0, 32),
            Some(Selector::B0) => (0, 8),
            Some(Selector::B1) => (8, 8),
            Some(Selector::B2) => (16, 8),
            Some(Selector::B3) => (24, 8),
            Some(Selector::H0) => (0, 16),
            Some(Selector::H1) => (16, 16),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LabelId(pub u32);
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FuncId(pub u32);

/// A variable: module-level (`.global`, `.const`) or a function's own (parameters, return
/// parameters, `.local` arrays, `.param` declared in a call sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VarId {
    Module(u32),
    Function(u32),
}

/// An immediate operand as written; its bits for a given instruction type come from
/// [`Imm::bits_for`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Imm {
    /// Integer literal (the value with its sign; hex literals are taken as unsigned).
    Int(i128),
    /// `0fXXXXXXXX`: single-precision bits.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal float literal: double-precision bits.
    F64(u64),
}

impl Imm {
    /// The immediate converted to an operand of type `ty`, as a bit pattern (PTX ISA 4.5.1:
    /// integer literals are truncated to the type's width; float literals are converted).
    pub fn bits_for(self, ty: Type) -> u64 {
        match (self, ty) {
            (Imm::Int(v), Type::F32) => (v as f32).to_bits() as u64,
            (Imm::Int(v), Type::F64) => (v as f64).to_bits(),
            (Imm::Int(v), t) => (v as u64) & t.mask(),
            (Imm::F32(b), Type::F64) => (f32::from_bits(b) as f64).to_bits(),
            (Imm::F32(b), t) => (b as u64) & t.mask(),
            (Imm::F64(b), Type::F32) => (f64::from_bits(b) as f32).to_bits() as u64,
            (Imm::F64(b), t) => b & t.mask(),
        }
    }
}

/// Base of a memory address operand `[base+offset]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AddrBase {
    Reg(RegId),
    Var(VarId),
    /// An absolute address `[imm]`.
    None,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Address {
    pub base: AddrBase,
    pub offset: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Reg(RegId),
    /// A register with a sub-word selector (video instructions).
    RegSel(RegId, Selector),
    /// A register with a lane selector or mask of the SIMD video instructions (`%r.h10`).
    RegLanes(RegId, LaneSpec),
    /// `!%p`: a negated predicate source.
    NotPred(RegId),
    /// `-%r` or `-%r.h0`: a negated source (vmad).
    NegReg(RegId, Option<Selector>),
    Imm(Imm),
    Special(SpecialReg),
    Addr(Address),
    /// `{a, b, ...}`: each element an [`Operand::Reg`], an [`Operand::Imm`] (in a source)
    /// or the sink [`Operand::Sink`] (in a destination).
    Vector(Vec<Operand>),
    /// A variable's address (`mov.u64 %rd, var`).
    Var(VarId),
    /// A variable's address plus a byte offset: `var+8`, or `var[2]` (two elements on).
    VarPlus(VarId, i64),
    /// The sink `_` as a whole destination.
    Sink,
}

/// `@%p` or `@!%p`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Guard {
    pub reg: RegId,
    pub negated: bool,
}

modifier_enum! {
    /// Integer binary operations with the same shape `op.type d, a, b` (PTX ISA 9.7.1, 9.7.8).
    IntBinOp {
        Add = "add", Sub = "sub", Min = "min", Max = "max",
        Div = "div", Rem = "rem",
        And = "and", Or = "or", Xor = "xor",
        Shl = "shl", Shr = "shr",
    }
}

modifier_enum! {
    /// Integer unary operations `op.type d, a`.
    IntUnOp {
        Neg = "neg", Abs = "abs", Not = "not", Cnot = "cnot",
        Popc = "popc", Clz = "clz", Brev = "brev",
    }
}

impl IntBinOp {
    /// The type `b` is read at: a shift amount is `.u32` whatever the type (9.7.8.8–9).
    pub fn b_type(self, ty: Type) -> Type {
        if matches!(self, IntBinOp::Shl | IntBinOp::Shr) {
            Type::U32
        } else {
            ty
        }
    }
}

impl IntUnOp {
    /// The type of the result: `popc` and `clz` count into a `.u32` (9.7.1.13–14).
    pub fn result_type(self, ty: Type) -> Type {
        if matches!(self, IntUnOp::Popc | IntUnOp::Clz) {
            Type::U32
        } else {
            ty
        }
    }
}

/// Carry-flag use of the extended-precision forms (PTX ISA 9.7.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Carry {
    /// Reads CC.CF (`addc`, `subc`, `madc`).
    pub carry_in: bool,
    /// Writes CC.CF (`.cc`).
    pub carry_out: bool,
}

modifier_enum! {
    /// Float binary operations `op{.rnd}{.ftz}{.sat}.type d, a, b` (PTX ISA 9.7.3).
    FloatBinOp { Add = "add", Sub = "sub", Mul = "mul", Div = "div", Min = "min", Max = "max" }
}

modifier_enum! {
    /// Float unary operations (PTX ISA 9.7.3).
    FloatUnOp {
        Neg = "neg", Abs = "abs", Sqrt = "sqrt", Rcp = "rcp", Rsqrt = "rsqrt",
        Ex2 = "ex2", Lg2 = "lg2", Sin = "sin", Cos = "cos",
    }
}

/// Precision qualifier of float `div`, `sqrt`, `rcp` and the approximate functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// IEEE-754 rounding in the given mode.
    Ieee(Rounding),
    /// `.approx`: fast approximation (we compute the correctly rounded result, which is within
    /// every documented error bound).
    Approx,
    /// `.full` (`div.full.f32`): 2 ulp in PTX; computed correctly rounded here.
    Full,
}

modifier_enum! {
    /// Direction of `shf`.
    ShfDir { L = "l", R = "r" }
}

modifier_enum! {
    /// Shift-amount handling of `shf`.
    ShfMode { Wrap = "wrap", Clamp = "clamp" }
}

modifier_enum! {
    /// `prmt` modes (PTX ISA 9.7.8.7).
    PrmtMode { F4e = "f4e", B4e = "b4e", Rc8 = "rc8", Ecl = "ecl", Ecr = "ecr", Rc16 = "rc16" }
}

modifier_enum! {
    /// Primary operations of the scalar video instructions other than `vset` and `vmad`
    /// (PTX ISA 9.7.18.1.1–2).
    VideoOp {
        Vadd = "vadd", Vsub = "vsub", Vabsdiff = "vabsdiff", Vmin = "vmin", Vmax = "vmax",
        Vshl = "vshl", Vshr = "vshr",
    }
}

modifier_enum! {
    /// Secondary operation of a scalar video instruction with a third operand.
    VideoSecOp { Add = "add", Min = "min", Max = "max" }
}

modifier_enum! {
    /// `vmad` result scaling.
    VmadScale { Shr7 = "shr7", Shr15 = "shr15" }
}

modifier_enum! {
    /// Operations of the SIMD video instructions `vadd2 … vmax4` (PTX ISA 9.7.18.2), named
    /// without their lane count.
    SimdOp {
        Vadd = "vadd", Vsub = "vsub", Vavrg = "vavrg", Vabsdiff = "vabsdiff",
        Vmin = "vmin", Vmax = "vmax",
    }
}

/// A lane selector or destination mask of the SIMD video instructions as written: `.h` or
/// `.b` and one to four decimal digits, the highest lane's first (`.h10`, `.b7654`, `.b31`).
/// Which ones an instruction takes is checked with the instruction; `.h0 .h1 .b0`–`.b3`
/// arrive as [`Selector`]s and convert with [`LaneSpec::from_selector`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaneSpec {
    /// `h` (half-words) or `b` (bytes).
    pub halves: bool,
    digits: [u8; 4],
    len: u8,
}

impl LaneSpec {
    /// Parses the text after the dot.
    pub fn from_ptx(text: &str) -> Option<LaneSpec> {
        let (halves, rest) = match text.as_bytes().split_first()? {
            (b'h', rest) => (true, rest),
            (b'b', rest) => (false, rest),
            _ => return None,
        };
        if rest.is_empty() || rest.len() > 4 || !rest.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut digits = [0; 4];
        for (k, c) in rest.iter().enumerate() {
            digits[k] = c - b'0';
        }
        Some(LaneSpec {
            halves,
            digits,
            len: rest.len() as u8,
        })
    }

    /// A scalar selector read as a lane spec (`.h0` is also the mask of lane 0).
    pub fn from_selector(sel: Selector) -> LaneSpec {
        LaneSpec::from_ptx(sel.ptx()).expect("every selector is a lane spec")
    }

    /// The digits as written, the highest lane's first.
    pub fn digits(&self) -> &[u8] {
        &self.digits[..self.len as usize]
    }
}

impl fmt::Display for LaneSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}", if self.halves { 'h' } else { 'b' })?;
        self.digits().iter().try_for_each(|d| write!(f, "{d}"))
    }
}

/// What each lane of a SIMD video instruction computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdKind {
    /// `vadd2 … vmax4`: the operation, the destination type (the range of `.sat`) and `.sat`.
    Arith { op: SimdOp, dty: Type, sat: bool },
    /// `vset2`, `vset4`: 1 where the comparison holds, else 0 (unsigned).
    Set(CmpOp),
}

/// The modifiers and selectors of the SIMD video instructions (PTX ISA 9.7.18.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimdForm {
    pub kind: SimdKind,
    /// 2 (half-word lanes) or 4 (byte lanes).
    pub lanes: u8,
    pub aty: Type,
    pub bty: Type,
    /// For each lane, the part of the pair `{b, a}` it takes from (`asel`, `bsel`): half-words
    /// 0–3 or bytes 0–7, part 0 the lowest of `a`. Lanes past `lanes` are unused.
    pub asel: [u8; 4],
    pub bsel: [u8; 4],
    /// Bit i: lane i's result is merged into d (else c's lane i is) or, with `.add`, added.
    pub mask: u8,
    /// `.add`: d = c + the sum of the masked lanes' results; otherwise the lanes merge.
    pub add: bool,
}

impl SimdForm {
    /// Bits per lane.
    pub fn lane_bits(self) -> u32 {
        32 / self.lanes as u32
    }
}

/// A source of a video instruction: a 32-bit register and the part of it selected (`None`:
/// the whole word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoSrc {
    pub value: VideoValue,
    pub sel: Option<Selector>,
}

/// A scalar video instruction's 32-bit operand: a register, or an immediate (ptxas takes
/// immediates for a, b and c; a literal keeps its low 32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoValue {
    Reg(RegId),
    Imm(u32),
}

impl VideoValue {
    /// The value as an ordinary operand.
    pub fn operand(self) -> Operand {
        match self {
            VideoValue::Reg(r) => Operand::Reg(r),
            VideoValue::Imm(v) => Operand::Imm(Imm::Int(v as i128)),
        }
    }
}

/// What a video instruction does with its intermediate result and the third operand `c`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoTail {
    /// `d = tmp`.
    None,
    /// `d = op(tmp, c)` (`.add .min .max`).
    Secondary(VideoSecOp, VideoValue),
    /// `d.dsel`: the low byte or half of tmp merged into c at the selected position.
    Merge(Selector, VideoValue),
}

impl VideoTail {
    /// The destination selector of a merge.
    pub fn dsel(self) -> Option<Selector> {
        match self {
            VideoTail::Merge(s, _) => Some(s),
            _ => None,
        }
    }
}

/// The modifiers of `vadd vsub vabsdiff vmin vmax vshl vshr` (PTX ISA 9.7.18.1.1–2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoForm {
    pub op: VideoOp,
    pub dty: Type,
    pub aty: Type,
    /// `.u32` for the shifts.
    pub bty: Type,
    pub sat: bool,
    /// `.clamp`/`.wrap` of the shifts.
    pub mode: Option<ShfMode>,
    pub tail: VideoTail,
}

/// The modifiers of `vmad` (PTX ISA 9.7.18.1.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmadForm {
    pub dty: Type,
    pub aty: Type,
    pub bty: Type,
    pub po: bool,
    pub sat: bool,
    pub scale: Option<VmadScale>,
    /// The product is negated (exactly one of `-a`, `-b`).
    pub neg_product: bool,
    pub neg_c: bool,
}

impl VmadForm {
    /// Whether the product is signed (and c extended by its sign): a signed source, or a
    /// negated product.
    pub fn signed_product(self) -> bool {
        self.aty.is_signed() || self.bty.is_signed() || self.neg_product
    }
    /// Whether the result saturates as a signed value: the product is signed, or c negated.
    pub fn signed_final(self) -> bool {
        self.signed_product() || self.neg_c
    }
    /// The right shift of the sum (`.shr7`, `.shr15`).
    pub fn shift(self) -> u32 {
        match self.scale {
            None => 0,
            Some(VmadScale::Shr7) => 7,
            Some(VmadScale::Shr15) => 15,
        }
    }
}

/// Rounding of `cvt`: a float rounding (`.rn` …) or an integer rounding (`.rni` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtRounding {
    Float(Rounding),
    Int(IntRounding),
}

/// Direction of `cvta`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvtaDir {
    /// `cvta.space`: space address to generic.
    ToGeneric,
    /// `cvta.to.space`: generic address to space.
    ToSpace,
}

/// The operation of `atom` and `red` (PTX ISA, Parallel Synchronization and Communication
/// Instructions: atom, red).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    And,
    Or,
    Xor,
    Add,
    /// `(old >= b) ? 0 : old + 1`, unsigned.
    Inc,
    /// `(old == 0 || old > b) ? b : old - 1`, unsigned.
    Dec,
    Min,
    Max,
    /// Stores b.
    Exch,
    /// Stores c if old equals b.
    Cas,
}

impl AtomOp {
    pub fn from_ptx(m: &str) -> Option<AtomOp> {
        Some(match m {
            "and" => AtomOp::And,
            "or" => AtomOp::Or,
            "xor" => AtomOp::Xor,
            "add" => AtomOp::Add,
            "inc" => AtomOp::Inc,
            "dec" => AtomOp::Dec,
            "min" => AtomOp::Min,
            "max" => AtomOp::Max,
            "exch" => AtomOp::Exch,
            "cas" => AtomOp::Cas,
            _ => return None,
        })
    }
}

modifier_enum! {
    /// The memory-consistency qualifier of `ld`/`st` (PTX ISA, Memory Consistency Model):
    /// `.weak` (the default), `.volatile`, `.relaxed`, `.acquire` (loads), `.release`
    /// (stores). The scope that goes with the last three is accepted and ignored: ordering
    /// is system-wide here.
    MemOrder {
        Weak = "weak", Volatile = "volatile", Relaxed = "relaxed", Acquire = "acquire",
        Release = "release",
    }
}

impl MemOrder {
    /// Whether the access is single-copy atomic (a "strong" operation): all but `.weak`.
    pub fn is_strong(self) -> bool {
        self != MemOrder::Weak
    }
}

modifier_enum! {
    /// The reduction of `bar.red` (PTX ISA, Parallel Synchronization and Communication
    /// Instructions: bar).
    BarRed { Popc = "popc", And = "and", Or = "or" }
}

modifier_enum! {
    /// Modes of `shfl.sync` (PTX ISA, Data Movement and Conversion Instructions: shfl.sync).
    ShflMode { Up = "up", Down = "down", Bfly = "bfly", Idx = "idx" }
}

modifier_enum! {
    /// Modes of `vote.sync` (PTX ISA, Parallel Synchronization and Communication
    /// Instructions: vote.sync).
    VoteMode { All = "all", Any = "any", Uni = "uni", Ballot = "ballot" }
}

modifier_enum! {
    /// Operations of `redux.sync` (PTX ISA, Parallel Synchronization and Communication
    /// Instructions: redux.sync).
    ReduxOp { Add = "add", Min = "min", Max = "max", And = "and", Or = "or", Xor = "xor" }
}

/// What a thread waits for at an [`Inst::Sync`], and the order of its `srcs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOp {
    /// `bar{.cta}.sync`/`barrier{.cta}.sync` (`wait`), `bar.arrive` (not `wait`) and
    /// `bar.red` (PTX ISA, Parallel Synchronization and Communication Instructions: bar,
    /// barrier; the other collectives are in the same chapter but `shfl.sync`): srcs are the barrier id, then the thread count if
    /// `counted`, then for `bar.red` the predicate.
    Bar {
        wait: bool,
        counted: bool,
        red: Option<BarRed>,
    },
    /// `bar.warp.sync membermask`.
    WarpSync,
    /// `shfl.sync.mode.b32 d[|p], a, b, c, membermask`.
    Shfl(ShflMode),
    /// `vote.sync.mode d, {!}a, membermask`: d is a pred, or a b32 for ballot.
    Vote(VoteMode),
    /// `match.any/all.sync.type d[|p], a, membermask`.
    Match { all: bool, ty: Type },
    /// `redux.sync.op.type d, a, membermask`.
    Redux(ReduxOp, Type),
    /// `activemask.b32 d`.
    Activemask,
    /// `elect.sync d|p, membermask`.
    Elect,
}

impl SyncOp {
    /// Whether the point concerns the whole block (a barrier) rather than one warp.
    pub fn is_barrier(self) -> bool {
        matches!(self, SyncOp::Bar { .. })
    }
    /// The types of the sources, in order.
    pub fn src_types(self) -> Vec<Type> {
        match self {
            SyncOp::Bar { counted, red, .. } => {
                let mut t = vec![Type::U32];
                if counted {
                    t.push(Type::U32);
                }
                if red.is_some() {
                    t.push(Type::Pred);
                }
                t
            }
            SyncOp::WarpSync | SyncOp::Elect => vec![Type::B32],
            SyncOp::Shfl(_) => vec![Type::B32, Type::U32, Type::U32, Type::B32],
            SyncOp::Vote(_) => vec![Type::Pred, Type::B32],
            SyncOp::Match { ty, .. } | SyncOp::Redux(_, ty) => vec![ty, Type::B32],
            SyncOp::Activemask => vec![],
        }
    }
    /// Where the membermask is among the sources (`bar.warp.sync`, `shfl`, `vote`, `match`,
    /// `redux`, `elect` have one).
    pub fn mask_index(self) -> Option<usize> {
        match self {
            SyncOp::WarpSync | SyncOp::Elect => Some(0),
            SyncOp::Shfl(_) => Some(3),
            SyncOp::Vote(_) | SyncOp::Match { .. } | SyncOp::Redux(..) => Some(1),
            SyncOp::Bar { .. } | SyncOp::Activemask => None,
        }
    }
    /// The type of the `d` result.
    pub fn d_type(self) -> Type {
        match self {
            SyncOp::Bar {
                red: Some(BarRed::Popc),
                ..
            } => Type::U32,
            SyncOp::Bar { .. } => Type::Pred,
            SyncOp::Vote(VoteMode::Ballot) => Type::B32,
            SyncOp::Vote(_) => Type::Pred,
            SyncOp::Redux(_, ty) => ty,
            _ => Type::B32,
        }
    }
}

modifier_enum! {
    /// Properties `testp` tests (PTX ISA, Floating-Point Instructions: testp).
    TestpOp {
        Finite = "finite", Infinite = "infinite", Number = "number",
        NotANumber = "notanumber", Normal = "normal", Subnormal = "subnormal",
    }
}

modifier_enum! {
    /// The half-precision arithmetic instructions (PTX ISA 9.7.4; `tanh` also on `.f32`).
    HalfFn {
        Add = "add", Sub = "sub", Mul = "mul", Fma = "fma", Neg = "neg", Abs = "abs",
        Min = "min", Max = "max", Ex2 = "ex2", Tanh = "tanh",
    }
}

impl HalfFn {
    /// How many sources the operation reads.
    pub fn arity(self) -> usize {
        match self {
            HalfFn::Neg | HalfFn::Abs | HalfFn::Ex2 | HalfFn::Tanh => 1,
            HalfFn::Fma => 3,
            _ => 2,
        }
    }
}

/// A half-precision computation, [`ComputeOp::Half`]: PTX ISA 9.7.4 (Half Precision
/// Floating-Point Instructions), 9.7.7 (Half Precision Comparison Instructions) and the
/// half-precision forms of `cvt` (9.7.9.21). On a packed type (`.f16x2`, `.bf16x2`) the
/// operation applies to each 16-bit half.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfOp {
    /// `f{.rn}{.ftz}{.sat|.relu}{.NaN}{.xorsign.abs}.ty d, a{, b{, c}}`.
    Arith {
        f: HalfFn,
        ty: Type,
        ftz: bool,
        sat: bool,
        relu: bool,
        nan: bool,
        xorsign: bool,
    },
    /// `setp.cmp{.bop}{.ftz}.ty p|q, a, b{, c}`: `d` is p and `p` is q. On a pair, p is
    /// the low halves' comparison and q the high halves'; on one half, q is p's complement.
    Setp {
        cmp: CmpOp,
        combine: Option<BoolOp>,
        ftz: bool,
        ty: Type,
    },
    /// `set.cmp{.bop}{.ftz}.dty.sty d, a, b{, c}` with a half type on either side: true is
    /// 1.0 in a half destination and all ones in an integer one, per half of a pair.
    Set {
        cmp: CmpOp,
        combine: Option<BoolOp>,
        ftz: bool,
        dty: Type,
        sty: Type,
    },
    /// `cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dty.aty d, a` with a half type on either
    /// side.
    Cvt {
        dty: Type,
        aty: Type,
        rnd: Option<CvtRounding>,
        ftz: bool,
        sat: bool,
        relu: bool,
        satfinite: bool,
    },
    /// `cvt.rnd{.relu}{.satfinite}.dty.f32 d, a, b` (dty `.f16x2` or `.bf16x2`): a converted
    /// into the upper half, b into the lower.
    CvtPair {
        dty: Type,
        rnd: Rounding,
        relu: bool,
        satfinite: bool,
    },
}

impl HalfOp {
    /// The types of the sources, in order.
    pub fn src_types(self) -> Vec<Type> {
        let with_c = |ty, combine: Option<BoolOp>| {
            let mut t = vec![ty, ty];
            if combine.is_some() {
                t.push(Type::Pred);
            }
            t
        };
        match self {
            HalfOp::Arith { f, ty, .. } => vec![ty; f.arity()],
            HalfOp::Setp { ty, combine, .. } => with_c(ty, combine),
            HalfOp::Set { sty, combine, .. } => with_c(sty, combine),
            HalfOp::Cvt { aty, .. } => vec![aty],
            HalfOp::CvtPair { .. } => vec![Type::F32, Type::F32],
        }
    }
    /// The type of the `d` result (a predicate for `setp`).
    pub fn d_type(self) -> Type {
        match self {
            HalfOp::Arith { ty, .. } => ty,
            HalfOp::Setp { .. } => Type::Pred,
            HalfOp::Set { dty, .. } | HalfOp::Cvt { dty, .. } | HalfOp::CvtPair { dty, .. } => dty,
        }
    }
}

/// An [`Inst::Compute`]: an instruction whose results are a pure function of its sources.
/// Each names its sections of the PTX ISA (Integer Arithmetic, Logic and Shift, Floating-Point,
/// Data Movement and Conversion Instructions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeOp {
    /// `bfind{.shiftamt}.type d, a`: the position of the most significant non-sign bit.
    Bfind { ty: Type, shiftamt: bool },
    /// `fns.b32 d, mask, base, offset`: the position of the offset-th set bit from base.
    Fns,
    /// `bmsk.mode.b32 d, a, b`: a mask of `b` bits from bit `a`.
    Bmsk { wrap: bool },
    /// `szext.mode.type d, a, b`: `a`'s low `b` bits, sign- or zero-extended.
    Szext { wrap: bool, signed: bool },
    /// `mul24.mode.type d, a, b`, and with `add` `mad24.mode{.sat}.type d, a, b, c`: the
    /// 48-bit product of 24-bit operands, its bits 47..16 (`hi`) or 31..0.
    Mul24 {
        hi: bool,
        signed: bool,
        add: bool,
        sat: bool,
    },
    /// `sad.type d, a, b, c`: c + |a - b|.
    Sad { ty: Type },
    /// `dp4a.atype.btype d, a, b, c` (`half` None) and `dp2a.mode.atype.btype` (`half`
    /// Some(hi): which half of b's bytes).
    Dot {
        half: Option<bool>,
        a_signed: bool,
        b_signed: bool,
    },
    /// `lop3{.or|.and}.b32 d{|p}, a, b, c, immLut{, q}`: the truth table `lut` applied to
    /// each bit of a, b, c; with `combine`, p = (d != 0) op q.
    Lop3 { lut: u8, combine: Option<BoolOp> },
    /// `copysign.type d, a, b`: b with a's sign.
    Copysign { ty: Type },
    /// `testp.op.type p, a`.
    Testp { op: TestpOp, ty: Type },
    /// `cvt.pack.sat.T.s32{.b32} d, a, b{, c}`: a and b saturated to `bits`-bit integers
    /// (T is .u16 .s16 .u8 .s8 .u4 .s4 .u2 .s2) and packed, a above b, c's low bits above
    /// them.
    CvtPack {
        bits: u8,
        signed: bool,
        with_c: bool,
    },
    /// Half precision (and `tanh.approx.f32`): see [`HalfOp`].
    Half(HalfOp),
}

impl ComputeOp {
    /// The types of the sources, in order.
    pub fn src_types(self) -> Vec<Type> {
        use Type::*;
        let signed = |s| if s { S32 } else { U32 };
        match self {
            ComputeOp::Bfind { ty, .. } => vec![ty],
            ComputeOp::Fns => vec![B32, U32, S32],
            ComputeOp::Bmsk { .. } => vec![B32, U32],
            ComputeOp::Szext { signed: s, .. } => vec![signed(s), U32],
            ComputeOp::Mul24 { signed: s, add, .. } => {
                vec![signed(s); if add { 3 } else { 2 }]
            }
            ComputeOp::Sad { ty } => vec![ty; 3],
            ComputeOp::Dot {
                a_signed, b_signed, ..
            } => vec![
                signed(a_signed),
                signed(b_signed),
                signed(a_signed || b_signed),
            ],
            ComputeOp::Lop3 { combine, .. } => {
                let mut t = vec![B32; 3];
                if combine.is_some() {
                    t.push(Pred);
                }
                t
            }
            ComputeOp::Copysign { ty } => vec![ty, ty],
            ComputeOp::Testp { ty, .. } => vec![ty],
            ComputeOp::CvtPack { with_c, .. } => {
                let mut t = vec![S32, S32];
                if with_c {
                    t.push(B32);
                }
                t
            }
            ComputeOp::Half(h) => h.src_types(),
        }
    }
    /// The type of the `d` result ([`Inst::Compute`]'s `d` is a sink for `testp`).
    pub fn d_type(self) -> Type {
        match self {
            ComputeOp::Bfind { .. } => Type::U32,
            ComputeOp::Fns | ComputeOp::Bmsk { .. } | ComputeOp::Lop3 { .. } => Type::B32,
            ComputeOp::Szext { signed, .. } | ComputeOp::Mul24 { signed, .. } => {
                if signed {
                    Type::S32
                } else {
                    Type::U32
                }
            }
            ComputeOp::Dot {
                a_signed, b_signed, ..
            } => {
                if a_signed || b_signed {
                    Type::S32
                } else {
                    Type::U32
                }
            }
            ComputeOp::Sad { ty } | ComputeOp::Copysign { ty } => ty,
            ComputeOp::Testp { .. } => Type::Pred,
            ComputeOp::CvtPack { .. } => Type::U32,
            ComputeOp::Half(h) => h.d_type(),
        }
    }
}

/// One instruction, its modifiers typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    Mov {
        ty: Type,
        d: Operand,
        a: Operand,
    },
    Ld {
        space: Option<Space>,
        order: MemOrder,
        vec: u8,
        ty: Type,
        d: Operand,
        addr: Address,
    },
    St {
        space: Option<Space>,
        order: MemOrder,
        vec: u8,
        ty: Type,
        addr: Address,
        a: Operand,
    },
    /// `atom` (d is the old value) and `red` (d is [`Operand::Sink`]): a read-modify-write
    /// of `ty` at `addr`, atomic with respect to every other thread; `c` is `cas`'s new
    /// value.
    Atom {
        op: AtomOp,
        space: Option<Space>,
        ty: Type,
        d: Operand,
        addr: Address,
        b: Operand,
        c: Option<Operand>,
    },
    Cvta {
        dir: CvtaDir,
        space: Space,
        ty: Type,
        d: Operand,
        a: Operand,
    },
    /// add sub min max div rem and or xor shl shr on integer and pred types.
    IntBin {
        op: IntBinOp,
        ty: Type,
        sat: bool,
        carry: Carry,
        d: Operand,
        a: Operand,
        b: Operand,
    },
    IntUn {
        op: IntUnOp,
        ty: Type,
        d: Operand,
        a: Operand,
    },
    Mul {
        mode: MulMode,
        ty: Type,
        d: Operand,
        a: Operand,
        b: Operand,
    },
    Mad {
        mode: MulMode,
        ty: Type,
        sat: bool,
        carry: Carry,
        d: Operand,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    Shf {
        dir: ShfDir,
        mode: ShfMode,
        d: Operand,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    /// `bfe.type d, a, pos, len`.
    Bfe {
        ty: Type,
        d: Operand,
        a: Operand,
        pos: Operand,
        len: Operand,
    },
    /// `bfi.type f, a, b, pos, len` (the manual calls the destination `f`).
    Bfi {
        ty: Type,
        d: Operand,
        a: Operand,
        b: Operand,
        pos: Operand,
        len: Operand,
    },
    Prmt {
        mode: Option<PrmtMode>,
        d: Operand,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    Setp {
        cmp: CmpOp,
        combine: Option<BoolOp>,
        ftz: bool,
        ty: Type,
        p: Operand,
        q: Operand,
        a: Operand,
        b: Operand,
        c: Option<Operand>,
    },
    Selp {
        ty: Type,
        d: Operand,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    Slct {
        ty: Type,
        cty: Type,
        ftz: bool,
        d: Operand,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    Cvt {
        dty: Type,
        aty: Type,
        rnd: Option<CvtRounding>,
        ftz: bool,
        sat: bool,
        d: Operand,
        a: Operand,
    },
    FloatBin {
        op: FloatBinOp,
        ty: Type,
        prec: Precision,
        ftz: bool,
        sat: bool,
        d: Operand,
        a: Operand,
        b: Operand,
    },
    FloatUn {
        op: FloatUnOp,
        ty: Type,
        prec: Precision,
        ftz: bool,
        d: Operand,
        a: Operand,
    },
    /// `fma` and float `mad`: one rounding of a*b+c.
    Fma {
        ty: Type,
        rnd: Rounding,
        ftz: bool,
        sat: bool,
        d: Operand,
        a: Operand,
        b: Operand,
        c: Operand,
    },
    /// `vadd vsub vabsdiff vmin vmax vshl vshr` (PTX ISA 9.7.18.1.1–2).
    Video {
        form: VideoForm,
        d: RegId,
        a: VideoSrc,
        b: VideoSrc,
    },
    /// `vset` (9.7.18.1.4): the comparison is 0 or 1, unsigned.
    Vset {
        aty: Type,
        bty: Type,
        cmp: CmpOp,
        tail: VideoTail,
        d: RegId,
        a: VideoSrc,
        b: VideoSrc,
    },
    /// `vmad` (9.7.18.1.3).
    Vmad {
        form: VmadForm,
        d: RegId,
        a: VideoSrc,
        b: VideoSrc,
        c: VideoValue,
    },
    /// The SIMD video instructions `vadd2 … vmax4`, `vset2`, `vset4` (9.7.18.2): every lane
    /// of a and b is read through the selectors, so they carry none here; d is written whole.
    VideoSimd {
        form: SimdForm,
        d: RegId,
        a: RegId,
        b: RegId,
        c: RegId,
    },
    Bra {
        uni: bool,
        target: LabelId,
    },
    Call {
        uni: bool,
        func: FuncId,
        rets: Vec<Operand>,
        args: Vec<Operand>,
    },
    /// `fence` and `membar` (PTX ISA, Parallel Synchronization and Communication
    /// Instructions): a sequentially consistent fence, whatever `.sem`/`.scope`/level it
    /// names.
    Fence,
    /// A barrier or warp collective: a point where a thread waits for other threads of its
    /// block or warp (see [`SyncOp`] for the operands). `d` and `p` are the results
    /// ([`Operand::Sink`] where the form has none).
    Sync {
        op: SyncOp,
        d: Operand,
        p: Operand,
        srcs: Vec<Operand>,
    },
    /// An instruction whose results are a pure function of its sources (see
    /// [`ComputeOp`]): `d` (a sink for `testp`) and `p` (the predicate of `testp` and of
    /// `lop3`'s combining form, otherwise a sink).
    Compute {
        op: ComputeOp,
        d: Operand,
        p: Operand,
        srcs: Vec<Operand>,
    },
    /// `nanosleep`, `prefetch`, `prefetchu`: hints without an effect a program can observe
    /// (a thread's sleep is not one: it may last zero time). Their operands are checked and
    /// dropped.
    Hint,
    /// `isspacep.space p, a` (PTX ISA, Data Movement and Conversion Instructions: isspacep): whether generic address `a` lies in `space`.
    Isspacep {
        space: Space,
        p: Operand,
        a: Operand,
    },
    Ret,
    Exit,
}

impl Inst {
    /// A load's or store's state space, vector count, element type and address.
    pub fn load_or_store(&self) -> Option<(Option<Space>, u8, Type, &Address)> {
        match self {
            Inst::Ld {
                space,
                vec,
                ty,
                addr,
                ..
            }
            | Inst::St {
                space,
                vec,
                ty,
                addr,
                ..
            } => Some((*space, *vec, *ty, addr)),
            _ => None,
        }
    }

    /// Whether the instruction writes register `r` (as a destination, a vector element or a
    /// call's return value).
    pub fn writes(&self, r: RegId) -> bool {
        let mut found = false;
        self.for_each_written(|x| found |= x == r);
        found
    }

    /// The registers the instruction writes, in no particular order.
    pub fn written(&self) -> Vec<RegId> {
        let mut regs = Vec::new();
        self.for_each_written(|r| regs.push(r));
        regs
    }

    /// Calls `f` with each register the instruction writes. Exhaustive, so that a new
    /// instruction must say what it writes.
    fn for_each_written(&self, mut f: impl FnMut(RegId)) {
        let mut op = |o: &Operand| match o {
            Operand::Reg(x) => f(*x),
            Operand::Vector(parts) => parts.iter().for_each(|p| {
                if let Operand::Reg(x) = p {
                    f(*x)
                }
            }),
            _ => {}
        };
        use Inst::*;
        match self {
            Mov { d, .. }
            | Ld { d, .. }
            | Atom { d, .. }
            | Cvta { d, .. }
            | IntBin { d, .. }
            | IntUn { d, .. }
            | Mul { d, .. }
            | Mad { d, .. }
            | Shf { d, .. }
            | Bfe { d, .. }
            | Bfi { d, .. }
            | Prmt { d, .. }
            | Selp { d, .. }
            | Slct { d, .. }
            | Cvt { d, .. }
            | FloatBin { d, .. }
            | FloatUn { d, .. }
            | Fma { d, .. } => op(d),
            Setp { p, q, .. } => {
                op(p);
                op(q)
            }
            Sync { d, p, .. } | Compute { d, p, .. } => {
                op(d);
                op(p)
            }
            Isspacep { p, .. } => op(p),
            Video { d, .. } | Vset { d, .. } | Vmad { d, .. } | VideoSimd { d, .. } => {
                op(&Operand::Reg(*d))
            }
            Call { rets, .. } => rets.iter().for_each(op),
            St { .. } | Fence | Hint | Bra { .. } | Ret | Exit => {}
        }
    }
}

/// The names an instruction holds (registers, function or module variables, labels), each
/// visited in place by [`Instruction::visit_names`].
pub trait Names {
    fn reg(&mut self, r: &mut RegId);
    fn var(&mut self, v: &mut VarId);
    fn label(&mut self, l: &mut LabelId);

    fn address(&mut self, a: &mut Address) {
        match &mut a.base {
            AddrBase::Reg(r) => self.reg(r),
            AddrBase::Var(v) => self.var(v),
            AddrBase::None => {}
        }
    }

    fn operand(&mut self, o: &mut Operand) {
        match o {
            Operand::Reg(r)
            | Operand::RegSel(r, _)
            | Operand::RegLanes(r, _)
            | Operand::NotPred(r)
            | Operand::NegReg(r, _) => self.reg(r),
            Operand::Vector(parts) => parts.iter_mut().for_each(|p| self.operand(p)),
            Operand::Var(v) | Operand::VarPlus(v, _) => self.var(v),
            Operand::Addr(a) => self.address(a),
            Operand::Imm(_) | Operand::Special(_) | Operand::Sink => {}
        }
    }

    fn video(&mut self, v: &mut VideoValue) {
        if let VideoValue::Reg(r) = v {
            self.reg(r)
        }
    }
}

/// New names for what an instruction copied into another function names (inlining): its
/// registers, its function's variables (module variables keep theirs) and its labels, each
/// by old index.
pub struct Renaming<'a> {
    pub regs: &'a [RegId],
    pub vars: &'a [VarId],
    pub labels: &'a [LabelId],
}

impl Names for Renaming<'_> {
    fn reg(&mut self, r: &mut RegId) {
        *r = self.regs[r.0 as usize];
    }

    fn var(&mut self, v: &mut VarId) {
        if let VarId::Function(i) = *v {
            *v = self.vars[i as usize];
        }
    }

    fn label(&mut self, l: &mut LabelId) {
        *l = self.labels[l.0 as usize];
    }
}

/// Collects the variables an instruction names.
struct VarsNamed(Vec<VarId>);

impl Names for VarsNamed {
    fn reg(&mut self, _: &mut RegId) {}
    fn var(&mut self, v: &mut VarId) {
        self.0.push(*v);
    }
    fn label(&mut self, _: &mut LabelId) {}
}

impl Instruction {
    /// Gives the instruction (and its guard) the names of `to`.
    pub fn rename(&mut self, to: &Renaming) {
        let mut to = Renaming { ..*to };
        self.visit_names(&mut to);
    }

    /// The variables the instruction names (as addresses, operands or call arguments), in
    /// no particular order; a variable may appear twice.
    pub fn vars(&self) -> Vec<VarId> {
        let mut named = VarsNamed(Vec::new());
        self.clone().visit_names(&mut named);
        named.0
    }

    /// Visits every name the instruction (and its guard) holds.
    pub fn visit_names(&mut self, to: &mut impl Names) {
        if let Some(g) = &mut self.guard {
            to.reg(&mut g.reg);
        }
        use Inst::*;
        match &mut self.inst {
            Mov { d, a, .. }
            | Cvta { d, a, .. }
            | IntUn { d, a, .. }
            | Cvt { d, a, .. }
            | FloatUn { d, a, .. } => [d, a].into_iter().for_each(|x| to.operand(x)),
            Isspacep { p, a, .. } => [p, a].into_iter().for_each(|x| to.operand(x)),
            Ld { d, addr, .. } => {
                to.operand(d);
                to.address(addr);
            }
            St { addr, a, .. } => {
                to.address(addr);
                to.operand(a);
            }
            Atom { d, addr, b, c, .. } => {
                to.address(addr);
                [d, b]
                    .into_iter()
                    .chain(c.as_mut())
                    .for_each(|x| to.operand(x));
            }
            IntBin { d, a, b, .. } | Mul { d, a, b, .. } | FloatBin { d, a, b, .. } => {
                [d, a, b].into_iter().for_each(|x| to.operand(x))
            }
            Mad { d, a, b, c, .. }
            | Shf { d, a, b, c, .. }
            | Prmt { d, a, b, c, .. }
            | Selp { d, a, b, c, .. }
            | Slct { d, a, b, c, .. }
            | Fma { d, a, b, c, .. } => [d, a, b, c].into_iter().for_each(|x| to.operand(x)),
            Bfe { d, a, pos, len, .. } => [d, a, pos, len].into_iter().for_each(|x| to.operand(x)),
            Bfi {
                d, a, b, pos, len, ..
            } => [d, a, b, pos, len].into_iter().for_each(|x| to.operand(x)),
            Setp { p, q, a, b, c, .. } => [p, q, a, b]
                .into_iter()
                .chain(c.as_mut())
                .for_each(|x| to.operand(x)),
            Video { d, a, b, form } => {
                to.reg(d);
                to.video(&mut a.value);
                to.video(&mut b.value);
                if let VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) = &mut form.tail {
                    to.video(c);
                }
            }
            Vset { d, a, b, tail, .. } => {
                to.reg(d);
                to.video(&mut a.value);
                to.video(&mut b.value);
                if let VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) = tail {
                    to.video(c);
                }
            }
            Vmad { d, a, b, c, .. } => {
                to.reg(d);
                to.video(&mut a.value);
                to.video(&mut b.value);
                to.video(c);
            }
            VideoSimd { d, a, b, c, .. } => [d, a, b, c].into_iter().for_each(|r| to.reg(r)),
            Bra { target, .. } => to.label(target),
            Call { rets, args, .. } => rets
                .iter_mut()
                .chain(args.iter_mut())
                .for_each(|x| to.operand(x)),
            Sync { d, p, srcs, .. } | Compute { d, p, srcs, .. } => [d, p]
                .into_iter()
                .chain(srcs.iter_mut())
                .for_each(|x| to.operand(x)),
            Fence | Hint | Ret | Exit => {}
        }
    }
}

impl Inst {
    /// Whether the instruction reads or writes CC.CF (the extended-precision forms).
    pub fn uses_carry(&self) -> bool {
        match self {
            Inst::IntBin { carry, .. } | Inst::Mad { carry, .. } => {
                carry.carry_in || carry.carry_out
            }
            _ => false,
        }
    }

    /// The registers the instruction reads (its guard aside), in no particular order; a
    /// register may appear twice. A video instruction's `d` counts as read (its sub-word
    /// forms keep the other bytes).
    pub fn reads(&self) -> Vec<RegId> {
        let mut regs = Vec::new();
        let mut op = |o: &Operand| match o {
            Operand::Reg(r)
            | Operand::NotPred(r)
            | Operand::RegSel(r, _)
            | Operand::RegLanes(r, _)
            | Operand::NegReg(r, _) => regs.push(*r),
            Operand::Vector(parts) => regs.extend(parts.iter().filter_map(|p| match p {
                Operand::Reg(r) => Some(*r),
                _ => None,
            })),
            Operand::Addr(a) => {
                if let AddrBase::Reg(r) = a.base {
                    regs.push(r)
                }
            }
            Operand::Imm(_)
            | Operand::Special(_)
            | Operand::Var(_)
            | Operand::VarPlus(..)
            | Operand::Sink => {}
        };
        let addr = |a: &Address| Operand::Addr(*a);
        let video = |s: &VideoSrc| s.value.operand();
        let tail = |t: &VideoTail| match t {
            VideoTail::None => Operand::Sink,
            VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) => c.operand(),
        };
        use Inst::*;
        match self {
            Mov { a, .. } | Cvta { a, .. } | IntUn { a, .. } | Cvt { a, .. } => op(a),
            FloatUn { a, .. } | Isspacep { a, .. } => op(a),
            Ld { addr: at, .. } => op(&addr(at)),
            St { addr: at, a, .. } => {
                op(&addr(at));
                op(a);
            }
            Atom { addr: at, b, c, .. } => {
                op(&addr(at));
                op(b);
                c.iter().for_each(&mut op);
            }
            IntBin { a, b, .. } | Mul { a, b, .. } | FloatBin { a, b, .. } => {
                op(a);
                op(b);
            }
            Mad { a, b, c, .. }
            | Fma { a, b, c, .. }
            | Shf { a, b, c, .. }
            | Prmt { a, b, c, .. }
            | Selp { a, b, c, .. }
            | Slct { a, b, c, .. } => [a, b, c].into_iter().for_each(&mut op),
            Bfe { a, pos, len, .. } => [a, pos, len].into_iter().for_each(&mut op),
            Bfi { a, b, pos, len, .. } => [a, b, pos, len].into_iter().for_each(&mut op),
            Setp { a, b, c, .. } => {
                op(a);
                op(b);
                c.iter().for_each(&mut op);
            }
            Video { d, a, b, form, .. } => [Operand::Reg(*d), video(a), video(b), tail(&form.tail)]
                .iter()
                .for_each(&mut op),
            Vset {
                d, a, b, tail: t, ..
            } => [Operand::Reg(*d), video(a), video(b), tail(t)]
                .iter()
                .for_each(&mut op),
            Vmad { d, a, b, c, .. } => [Operand::Reg(*d), video(a), video(b), c.operand()]
                .iter()
                .for_each(&mut op),
            // d is not read: lanes outside the mask come from c.
            VideoSimd { a, b, c, .. } => {
                [a, b, c].map(|r| Operand::Reg(*r)).iter().for_each(&mut op)
            }
            Call { args, .. } => args.iter().for_each(&mut op),
            Sync { srcs, .. } | Compute { srcs, .. } => srcs.iter().for_each(&mut op),
            Bra { .. } | Fence | Hint | Ret | Exit => {}
        }
        regs
    }
}

/// An instruction with its guard and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub guard: Option<Guard>,
    pub inst: Inst,
    pub span: Span,
    /// 1-based source line.
    pub line: u32,
}

/// A declared register.
#[derive(Clone, Debug, PartialEq)]
pub struct RegDecl {
    pub name: String,
    pub ty: Type,
}

/// What a function-level variable is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarRole {
    /// The i-th input parameter (`.param`).
    Param(u32),
    /// The i-th return parameter of a `.func`.
    Ret(u32),
    /// Declared in the body (`.local`, `.param` of a call sequence, `.shared`, `.global`).
    Body,
}

/// A variable in memory: its space, element type, byte size and initial bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub name: String,
    pub space: Space,
    pub ty: Type,
    pub align: u32,
    /// Total size in bytes (element size × element count).
    pub size: usize,
    /// Initial contents (module `.global`/`.const` with initialisers); empty means zeroed.
    pub init: Vec<u8>,
    pub role: VarRole,
    /// An `.extern .shared` array of unspecified size: it starts the dynamic shared memory
    /// of a launch (size 0 here; every such array names the same bytes, as in CUDA).
    pub dynamic: bool,
    /// Initialiser elements that are other variables' addresses (`{tbl, generic(tbl)+8}`):
    /// each engine writes them into `init`'s zeros once the variables have their addresses.
    pub relocs: Vec<Reloc>,
}

/// An address in an initialiser: at byte `offset` of the variable, the 64-bit address of
/// module variable `target` plus `addend` (a generic address and a space address are the
/// same number here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reloc {
    pub offset: usize,
    pub target: u32,
    pub addend: i64,
}

/// A function parameter: in `.param` space (memory) or `.reg` space (a register, `.func` only).
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    Mem(VarId),
    Reg(RegId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncKind {
    Entry,
    Func,
}

modifier_enum! {
    /// Linkage directives.
    Linkage { Visible = "visible", Extern = "extern", Weak = "weak" }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub kind: FuncKind,
    pub linkage: Option<Linkage>,
    pub params: Vec<Param>,
    pub rets: Vec<Param>,
    pub regs: Vec<RegDecl>,
    pub vars: Vec<VarDecl>,
    /// `None` for a prototype without a body.
    pub body: Option<Vec<Instruction>>,
    /// Label id → index of the instruction it precedes.
    pub labels: Vec<usize>,
    pub span: Span,
    /// Why the function cannot run, when its body uses what ptxjit does not support yet (or
    /// calls a function that does): it then has no body, and calling or launching it fails
    /// with these located reasons while the rest of the module runs.
    pub refused: Vec<crate::frontend::Diagnostic>,
    /// A `.func` with barriers or warp collectives: it runs inlined into the kernels that
    /// call it (`refused` says why it cannot run on its own).
    pub inlined: bool,
    /// Calls the JIT replaced by the callee's body ([`InlinedCall`]), so that a fault inside
    /// one is reported as the call's, as the interpreter reports it.
    pub inlined_calls: Vec<InlinedCall>,
    /// The static `.shared` bytes a launch of it uses, as ptxas counts them
    /// ([`crate::block::ptxas_counts`]), counted before the functions with barriers are
    /// inlined into it (ptxas lays their variables out as a callee's); for a function the
    /// front end refused, its own variables.
    pub static_shared: u32,
}

/// A call replaced by its callee's body: instructions `body` of the caller are the callee's
/// (`callee`), called by the instruction at `span` on `line`.
#[derive(Clone, Debug, PartialEq)]
pub struct InlinedCall {
    pub body: std::ops::Range<usize>,
    pub callee: FuncId,
    pub span: Span,
    pub line: u32,
}

impl Function {
    pub fn var(&self, i: u32) -> &VarDecl {
        &self.vars[i as usize]
    }
    pub fn reg(&self, r: RegId) -> &RegDecl {
        &self.regs[r.0 as usize]
    }
    /// The PTX type of a parameter.
    pub fn param_type(&self, p: &Param) -> Type {
        match p {
            Param::Mem(VarId::Function(i)) => self.var(*i).ty,
            Param::Mem(VarId::Module(_)) => unreachable!("parameters are function variables"),
            Param::Reg(r) => self.reg(*r).ty,
        }
    }
    /// Byte size of a parameter.
    pub fn param_size(&self, p: &Param) -> usize {
        match p {
            Param::Mem(VarId::Function(i)) => self.var(*i).size,
            Param::Mem(VarId::Module(_)) => unreachable!("parameters are function variables"),
            Param::Reg(r) => self.reg(*r).ty.bytes(),
        }
    }
    pub fn param_name(&self, p: &Param) -> &str {
        match p {
            Param::Mem(VarId::Function(i)) => &self.var(*i).name,
            Param::Mem(VarId::Module(_)) => unreachable!("parameters are function variables"),
            Param::Reg(r) => &self.reg(*r).name,
        }
    }
}

/// The text a module was parsed from, for locating diagnostics and faults.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// File name as given (or `<input>`).
    pub path: String,
    pub text: String,
}

impl Source {
    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }
    /// The whole source line containing a byte offset, without its newline.
    pub fn line_text(&self, offset: usize) -> &str {
        let offset = offset.min(self.text.len());
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        self.text[start..end].trim_end_matches('\r')
    }
}

/// A parsed and validated PTX module.
#[derive(Clone, Debug, PartialEq)]
pub struct Module {
    /// `.version major.minor`.
    pub version: (u32, u32),
    /// `.target` entries as written (e.g. `sm_80`).
    pub target: Vec<String>,
    /// `.address_size` (64 unless stated).
    pub address_size: u32,
    /// Module-level `.global` and `.const` variables.
    pub vars: Vec<VarDecl>,
    pub functions: Vec<Function>,
    pub source: Source,
}

impl Module {
    /// Finds a function (with a body, or a prototype) by name.
    pub fn function(&self, name: &str) -> Option<(FuncId, &Function)> {
        self.functions
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == name)
            .map(|(i, f)| (FuncId(i as u32), f))
    }
    pub fn func(&self, id: FuncId) -> &Function {
        &self.functions[id.0 as usize]
    }
    /// The SM version of the first `sm_NN` target, if any.
    pub fn sm_version(&self) -> Option<u32> {
        self.target.iter().find_map(|t| {
            t.strip_prefix("sm_")
                .map(|s| s.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
                .and_then(|s| s.parse().ok())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The width and kind tables line up with the variants: checked against each type's PTX
    /// spelling (`u32` is 32 bits and unsigned, `pred` 1 bit, `bf16x2` two 16-bit floats).
    #[test]
    fn type_tables_follow_the_spelling() {
        assert_eq!(Type::ALL.len(), Type::BITS.len());
        for (i, t) in Type::ALL.iter().enumerate() {
            assert_eq!(*t as usize, i);
            let name = t.ptx();
            let (one, count) = name.split_once('x').unwrap_or((name, "1"));
            let digits = one.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            let bits = digits.parse().unwrap_or(1) * count.parse::<u32>().unwrap();
            assert_eq!(t.bits(), bits, "{name}");
            assert_eq!(t.mask().count_ones(), bits, "{name}");
            let kind = match &name[..1] {
                _ if name.starts_with("bf") => TypeKind::Float,
                "p" => TypeKind::Pred,
                "b" => TypeKind::Bits,
                "u" => TypeKind::Unsigned,
                "s" => TypeKind::Signed,
                _ => TypeKind::Float,
            };
            assert_eq!(t.kind(), kind, "{name}");
        }
    }
}
