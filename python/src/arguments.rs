//! Arguments: Python values to scalars of a parameter's PTX type (checked, never wrapped),
//! return values back to Python, and arrays as buffers over their own memory (the buffer
//! protocol, which NumPy arrays, `bytearray`, `array.array` and `memoryview` export).

use ptxjit::Value;
use ptxjit::ast::{Type, TypeKind};
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyFloat};
use pyo3::{IntoPyObjectExt, ffi};

/// How an argument is named in messages: "argument 2 (`x`, .u64)".
pub fn describe(index: usize, name: &str, ty: Type) -> String {
    format!("argument {} (`{name}`, .{})", index + 1, ty.ptx())
}

/// Whether `obj` is an integer to Python (has `__index__`: `int`, NumPy integers, `bool`).
pub fn is_integer(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a live object and the caller holds the GIL.
    unsafe { ffi::PyIndex_Check(obj.as_ptr()) != 0 }
}

/// Whether `obj` is an array: it exports a buffer and is not a number (Python's, or a
/// NumPy scalar, which exports a buffer too).
pub fn is_array(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `obj` is a live object and the caller holds the GIL.
    let (number, buffer) = unsafe {
        (
            ffi::PyLong_Check(obj.as_ptr()) != 0 || ffi::PyFloat_Check(obj.as_ptr()) != 0,
            ffi::PyObject_CheckBuffer(obj.as_ptr()) != 0,
        )
    };
    if number || !buffer {
        return false;
    }
    static GENERIC: PyOnceLock<Option<Py<PyAny>>> = PyOnceLock::new();
    let py = obj.py();
    let generic = GENERIC.get_or_init(py, || {
        py.import("numpy")
            .and_then(|np| np.getattr("generic"))
            .ok()
            .map(Bound::unbind)
    });
    match generic {
        Some(g) => !obj.is_instance(g.bind(py)).unwrap_or(false),
        None => true,
    }
}

/// The inclusive range of integers a type accepts: unsigned and signed values of its width
/// for `.u`/`.s`, and either for the untyped `.b` bits.
fn int_range(ty: Type) -> (i128, i128) {
    let bits = ty.bits();
    let unsigned_max = (1i128 << bits) - 1;
    let signed_min = -(1i128 << (bits - 1));
    match ty.kind() {
        TypeKind::Unsigned => (0, unsigned_max),
        TypeKind::Signed => (signed_min, (1i128 << (bits - 1)) - 1),
        TypeKind::Pred => (0, 1),
        _ => (signed_min, unsigned_max),
    }
}

/// `obj` as a scalar of type `ty`: integers (Python's or NumPy's) for integer types, in the
/// type's range; floats or integers for float types (an `.f32`/`.f16` argument rounds to
/// nearest even, and a finite value beyond the type's range is an error); `bool` or 0/1 for
/// predicates.
pub fn to_value(obj: &Bound<'_, PyAny>, ty: Type, what: &str) -> PyResult<Value> {
    let type_name = || {
        obj.get_type()
            .name()
            .map_or_else(|_| "?".to_string(), |n| n.to_string())
    };
    if is_array(obj) {
        return Err(PyTypeError::new_err(format!(
            "{what} takes a scalar, got an array ({})",
            type_name()
        )));
    }
    // A pair of halves (or a bfloat16) travels as its bits, an integer.
    if ty.is_float() && !matches!(ty, Type::F16 | Type::F32 | Type::F64) {
        if !is_integer(obj) {
            return Err(PyTypeError::new_err(format!(
                "{what} takes the {ty} value's bits as an integer, got {}",
                type_name()
            )));
        }
        let v: i128 = obj.extract().map_err(|_| out_of_range(what, obj))?;
        if v < 0 || v > ty.mask() as i128 {
            return Err(out_of_range(what, obj));
        }
        return Ok(Value::new(ty, v as u64));
    }
    if ty.is_float() {
        if !(obj.is_instance_of::<PyFloat>() || is_integer(obj) || has_float(obj)) {
            return Err(PyTypeError::new_err(format!(
                "{what} takes a float, got {}",
                type_name()
            )));
        }
        let x: f64 = obj
            .extract()
            .map_err(|_| PyValueError::new_err(format!("{what}: {obj} is out of range")))?;
        let bits = match ty {
            Type::F64 => x.to_bits(),
            Type::F32 => {
                let y = x as f32;
                if y.is_infinite() && x.is_finite() {
                    return Err(out_of_range(what, obj));
                }
                y.to_bits() as u64
            }
            _ => {
                let h = f16_bits(x);
                if h & 0x7fff == 0x7c00 && x.is_finite() {
                    return Err(out_of_range(what, obj));
                }
                h as u64
            }
        };
        return Ok(Value::new(ty, bits));
    }
    if !is_integer(obj) {
        return Err(PyTypeError::new_err(format!(
            "{what} takes an integer, got {}",
            type_name()
        )));
    }
    if ty.kind() != TypeKind::Pred && obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} takes an integer, got bool"
        )));
    }
    let v: i128 = obj.extract().map_err(|_| out_of_range(what, obj))?;
    let (lo, hi) = int_range(ty);
    if v < lo || v > hi {
        return Err(out_of_range(what, obj));
    }
    Ok(Value::new(ty, v as u64))
}

fn has_float(obj: &Bound<'_, PyAny>) -> bool {
    obj.hasattr("__float__").unwrap_or(false) && !obj.is_instance_of::<pyo3::types::PyString>()
}

fn out_of_range(what: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    PyValueError::new_err(format!("{what}: {obj} is out of range"))
}

/// A value as Python sees it: `int` (signed for `.s` types), `float`, `bool`.
pub fn to_python(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
    let bits = v.bits;
    match v.ty {
        Type::Pred => (bits & 1 != 0).into_py_any(py),
        Type::F64 => f64::from_bits(bits).into_py_any(py),
        Type::F32 => (f32::from_bits(bits as u32) as f64).into_py_any(py),
        Type::F16 => f16_value(bits as u16).into_py_any(py),
        t if t.is_signed() => {
            let shift = 64 - t.bits();
            (((bits << shift) as i64) >> shift).into_py_any(py)
        }
        _ => bits.into_py_any(py),
    }
}

/// The IEEE binary16 bits of `x`, rounded to nearest even.
pub fn f16_bits(x: f64) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 48) & 0x8000) as u16;
    if x.is_nan() {
        return sign | 0x7e00 | ((b >> 42) & 0x1ff) as u16;
    }
    let a = x.abs();
    if a >= 65520.0 {
        // 65520 is halfway between the largest half, 65504, and 2^16: it rounds to infinity.
        return sign | 0x7c00;
    }
    // The unit of the half's last mantissa bit: 2^(e-10) for a normal half of exponent e,
    // 2^-24 below 2^-14 (subnormals). Dividing by it is exact; rounding the quotient to an
    // integer, ties to even, is the half's rounding.
    let e2 = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let mut exp = e2.max(-14) - 10;
    let mut m = (a / 2f64.powi(exp)).round_ties_even() as u32;
    if m == 2048 {
        (m, exp) = (1024, exp + 1);
    }
    if m == 0 {
        return sign;
    }
    if exp == -24 && m < 1024 {
        return sign | m as u16;
    }
    let e = (exp + 10 + 15) as u32;
    if e >= 31 {
        return sign | 0x7c00;
    }
    sign | ((e << 10) as u16) | (m & 0x3ff) as u16
}

/// The value of IEEE binary16 bits.
pub fn f16_value(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((h >> 10) & 0x1f) as i32;
    let m = (h & 0x3ff) as f64;
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1024.0 + m) * 2f64.powi(e - 25),
    }
}

/// An element type as the buffer protocol's format names it: kind and size in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    Unsigned(usize),
    Signed(usize),
    Float(usize),
    Bool,
    Other,
}

/// The element type of a buffer (native byte order only).
fn elem_of(format: &str, item_size: usize) -> Elem {
    let f = format.trim_start_matches(['@', '=', '<']);
    if f.len() != 1 || (format.starts_with(['>', '!']) && item_size > 1) {
        return Elem::Other;
    }
    match f.as_bytes()[0] {
        b'B' | b'H' | b'I' | b'L' | b'Q' | b'N' => Elem::Unsigned(item_size),
        b'b' | b'h' | b'i' | b'l' | b'q' | b'n' => Elem::Signed(item_size),
        b'e' | b'f' | b'd' => Elem::Float(item_size),
        b'?' => Elem::Bool,
        _ => Elem::Other,
    }
}

/// Whether arrays of `elem` hold values of PTX type `ty` exactly.
pub fn elem_fits(elem: Elem, ty: Type) -> bool {
    let n = ty.bytes();
    match ty.kind() {
        TypeKind::Unsigned => elem == Elem::Unsigned(n),
        TypeKind::Signed => elem == Elem::Signed(n),
        TypeKind::Bits => elem == Elem::Unsigned(n) || elem == Elem::Signed(n),
        TypeKind::Float if matches!(ty, Type::F16 | Type::F32 | Type::F64) => {
            elem == Elem::Float(n)
        }
        TypeKind::Float => elem == Elem::Unsigned(n),
        TypeKind::Pred => elem == Elem::Bool || elem == Elem::Unsigned(1),
    }
}

/// NumPy's name of the dtype that holds a PTX type.
pub fn dtype_name(ty: Type) -> &'static str {
    match ty {
        Type::Pred => "bool",
        Type::U8 | Type::B8 => "uint8",
        Type::U16 | Type::B16 => "uint16",
        Type::U32 | Type::B32 => "uint32",
        Type::U64 | Type::B64 => "uint64",
        Type::S8 => "int8",
        Type::S16 => "int16",
        Type::S32 => "int32",
        Type::S64 => "int64",
        Type::F16 => "float16",
        Type::F32 => "float32",
        Type::F64 => "float64",
        // Bit patterns: NumPy has no bfloat16 nor pairs of halves.
        Type::BF16 => "uint16",
        Type::F16x2 | Type::BF16x2 => "uint32",
    }
}

/// An array argument: the exporter's buffer, held (so that the array cannot be resized or
/// freed) until this is dropped, which needs the GIL (pyo3 takes it).
pub struct Array {
    _buf: PyUntypedBuffer,
    pub ptr: *mut u8,
    pub len: usize,
    pub elem: Elem,
    pub shape: Vec<usize>,
}

// SAFETY: the pointer is into memory the held buffer export keeps alive; which thread uses
// it is up to the code that borrows it (a launch or call, while the export is held).
unsafe impl Send for Array {}
// SAFETY: as for Send: `Array` itself only hands out the pointer.
unsafe impl Sync for Array {}

/// `obj`'s memory, which must be C-contiguous (and writable when `writable`), with no copy.
pub fn array(obj: &Bound<'_, PyAny>, what: &str, writable: bool) -> PyResult<Array> {
    let buf = PyUntypedBuffer::get(obj).map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} takes an array (an object with the buffer protocol, such as a NumPy \
             array), got {}",
            obj.get_type()
                .name()
                .map_or_else(|_| "?".to_string(), |n| n.to_string())
        ))
    })?;
    if !buf.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{what} is not C-contiguous: ptxjit works on the array's own memory, in place; \
             pass a contiguous copy (numpy.ascontiguousarray) and read the results from it"
        )));
    }
    if writable && buf.readonly() {
        return Err(PyValueError::new_err(format!(
            "{what} is read-only: a kernel may write its buffers in place"
        )));
    }
    let format = buf.format().to_string_lossy().into_owned();
    let elem = elem_of(&format, buf.item_size());
    Ok(Array {
        ptr: buf.buf_ptr() as *mut u8,
        len: buf.len_bytes(),
        elem,
        shape: buf.shape().to_vec(),
        _buf: buf,
    })
}
