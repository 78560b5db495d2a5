//! A compiled PTX module as the three faces hold it: the JIT, every function's signature and
//! packed parameter layout, and its module variables entered in the [`registry`].

use crate::registry::{self, Kind};
use ptxjit::ast::FuncKind;
use ptxjit::{FunctionInfo, Jit, JitOptions, LaunchConfig, Module, ParseError, RunError};
use std::ffi::c_void;

/// Why a module did not load.
#[derive(Debug)]
pub enum LoadError {
    /// The text does not parse or validate.
    Parse(ParseError),
    /// It parsed but could not be compiled.
    Compile(RunError),
}

/// One compiled module.
pub struct Program {
    pub jit: Jit,
    /// Every function, in source order.
    pub functions: Vec<FunctionInfo>,
    /// Each function's packed parameter offsets and total size
    /// (`CU_LAUNCH_PARAM_BUFFER_POINTER`'s layout).
    pub layouts: Vec<(Vec<usize>, usize)>,
    /// Addresses of the module variables entered in the registry.
    variables: Vec<u64>,
}

impl Program {
    /// Parses, validates and compiles `text` (`path` names it in diagnostics); `checked`
    /// keeps the memory checks.
    pub fn compile(text: &str, path: &str, checked: bool) -> Result<Program, LoadError> {
        let module = Module::parse_named(text, path).map_err(LoadError::Parse)?;
        let options = JitOptions {
            checked,
            ..JitOptions::default()
        };
        let functions = module.signatures();
        let names: Vec<String> = module.vars.iter().map(|v| v.name.clone()).collect();
        let jit = Jit::with_options(module, options).map_err(LoadError::Compile)?;
        let layouts = functions.iter().map(|f| f.param_offsets()).collect();
        let variables = names
            .iter()
            .filter_map(|n| jit.global(n))
            .filter(|&(base, size)| registry::register(base, size, Kind::Variable))
            .map(|(base, _)| base)
            .collect();
        Ok(Program {
            jit,
            functions,
            layouts,
            variables,
        })
    }

    /// The index of the function named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.functions.iter().position(|f| f.name == name)
    }

    /// The index of the `.entry` named `name` that can run, or why there is none (no such
    /// kernel, or one using what ptxjit does not support yet, with the located reasons).
    pub fn kernel(&self, name: &str) -> Result<usize, RunError> {
        ptxjit::engine::find_function(self.jit.module(), name, FuncKind::Entry)?;
        Ok(self.index(name).expect("find_function found it"))
    }

    /// Each parameter of function `f` as the bytes `values[i]` points to (`cuLaunchKernel`'s
    /// `kernelParams`).
    ///
    /// # Safety
    ///
    /// `values` holds one pointer per parameter, each valid for reading the parameter's size
    /// for `'a`.
    pub unsafe fn pointed_params<'a>(&self, f: usize, values: *const *mut c_void) -> Vec<&'a [u8]> {
        let params = &self.functions[f].params;
        (0..params.len())
            .map(|i| {
                // SAFETY: the caller promises one readable pointer per parameter, each to
                // the parameter's size of bytes.
                unsafe {
                    let p = *values.add(i) as *const u8;
                    std::slice::from_raw_parts(p, params[i].size)
                }
            })
            .collect()
    }

    /// Each parameter of function `f` within a packed buffer (`CU_LAUNCH_PARAM_BUFFER_POINTER`),
    /// or None if the buffer is too small.
    pub fn packed_params<'a>(&self, f: usize, buffer: &'a [u8]) -> Option<Vec<&'a [u8]>> {
        let (offsets, size) = &self.layouts[f];
        if buffer.len() < *size {
            return None;
        }
        let params = &self.functions[f].params;
        Some(
            offsets
                .iter()
                .zip(params)
                .map(|(&o, p)| &buffer[o..o + p.size])
                .collect(),
        )
    }

    /// Launches kernel `f` on raw parameter bytes, checked (if compiled checked) against
    /// every region the registry knows.
    ///
    /// # Safety
    ///
    /// The addresses among the parameters must be host memory valid for the kernel's
    /// accesses: regions of the registry (whose owners keep them alive), or, unchecked,
    /// anything the kernel touches.
    pub unsafe fn launch(
        &self,
        f: usize,
        config: LaunchConfig,
        params: &[&[u8]],
    ) -> Result<(), RunError> {
        let areas = if self.jit.options().checked {
            registry::areas()
        } else {
            Default::default()
        };
        // SAFETY: the registry's regions are live (owned here, or registered by owners who
        // promised so); the rest is the caller's promise.
        unsafe {
            self.jit
                .launch_raw(&self.functions[f].name, config, params, &areas)
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        for &base in &self.variables {
            registry::release(base, &[Kind::Variable]);
        }
    }
}
