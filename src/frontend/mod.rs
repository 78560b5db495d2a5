//! PTX text → typed, validated [`Module`].
//!
//! The pest grammar (`ptx.pest`) gives a parse tree; this module walks it, resolves every name
//! (registers, variables, labels, functions) and hands each instruction to `instr`, which maps
//! its modifier list onto the opcode's typed form and checks operand types. All problems are
//! collected as located [`Diagnostic`]s.

pub mod diag;
mod inline;
pub use inline::inline_small_calls;
mod instr;
pub mod literal;

use crate::ast::*;
use crate::block::MAX_STATIC_SHARED_BYTES;
pub use diag::{Diagnostic, ParseError};
use pest::Parser;
use pest::iterators::Pair;
use std::collections::HashMap;

#[derive(pest_derive::Parser)]
#[grammar = "../ptx.pest"]
struct PtxParser;

/// Deepest nesting of `{`, `(` and `[` accepted. pest parses recursively, so unbounded nesting
/// would overflow the stack; real PTX nests a few levels.
pub const MAX_NESTING: usize = 64;

/// Parses and validates a module.
pub fn parse(text: &str, path: &str) -> Result<Module, ParseError> {
    let source = Source {
        path: path.to_string(),
        text: text.to_string(),
    };
    if let Some(span) = too_deep(text) {
        return Err(ParseError::single(
            source,
            span,
            format!("nesting deeper than {MAX_NESTING} levels"),
        ));
    }
    // A module that parses is parsed once; one with syntax errors once more per error.
    let repaired: String;
    let (parsed, skipped) = match PtxParser::parse(Rule::module, text) {
        Ok(pairs) => (Ok(pairs), Vec::new()),
        Err(first) => {
            let skipped;
            (repaired, skipped) = recover(text, first);
            (PtxParser::parse(Rule::module, &repaired), skipped)
        }
    };
    let tree = match parsed {
        Ok(mut pairs) => pairs.next().expect("the module rule always yields a pair"),
        Err(_) => {
            // Recovery gave up (no statement end to resume at): every syntax error so far.
            let diagnostics = skipped.into_iter().map(|(d, _)| d).collect();
            return Err(ParseError {
                source,
                diagnostics,
            });
        }
    };
    let mut b = ModuleBuilder {
        source: &source,
        line_starts: std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        diags: Vec::new(),
        module_vars: HashMap::new(),
        module_var_spaces: Vec::new(),
        funcs: HashMap::new(),
        headers: Vec::new(),
        skipped,
    };
    let module = b.build(tree);
    let diagnostics = b.diags;
    if diagnostics.is_empty() {
        Ok(module)
    } else {
        Err(ParseError {
            source,
            diagnostics,
        })
    }
}

/// How many syntax errors one module may report before parsing stops.
const MAX_SYNTAX_ERRORS: usize = 100;

/// Error recovery after the `first` syntax error: at each syntax error the statement around
/// it (from the end of the previous statement or block brace to the next `;`) is blanked
/// out, keeping its newlines so that every location stays where it was, and parsing starts
/// again. Returns
/// the text that parses (or the last attempt, when no statement end follows an error) and
/// each syntax error with the byte range it blanked.
fn recover(
    text: &str,
    first: pest::error::Error<Rule>,
) -> (String, Vec<(Diagnostic, std::ops::Range<usize>)>) {
    let mut repaired = text.to_string();
    let mut skipped = Vec::new();
    let mut error = Some(first);
    while let Some(e) = error.take() {
        let (span, message) = syntax_error(&repaired, &e);
        let bytes = repaired.as_bytes();
        let pos = span.start.min(bytes.len());
        // In a function's parameter list only the list is blanked: the function keeps its
        // body (which is then not checked: see `Header::broken`), so that one error in a
        // header is reported once, not once per statement of the body.
        if let Some(list) = header_list(bytes, pos)
            && !bytes[list.clone()].iter().all(|c| c.is_ascii_whitespace())
        {
            let blank: String = repaired[list.clone()]
                .bytes()
                .map(|c| if c == b'\n' { '\n' } else { ' ' })
                .collect();
            repaired.replace_range(list.clone(), &blank);
            skipped.push((Diagnostic::new(span, message), list));
            if skipped.len() >= MAX_SYNTAX_ERRORS {
                break;
            }
            error = PtxParser::parse(Rule::module, &repaired).err();
            continue;
        }
        let start = statement_start(bytes, pos);
        let Some(end) = bytes[pos..].iter().position(|&c| c == b';') else {
            skipped.push((Diagnostic::new(span, message), pos..pos));
            break;
        };
        let end = pos + end + 1;
        // Byte for byte, so that every later offset stays where it was.
        let blank: String = repaired[start..end]
            .bytes()
            .map(|c| if c == b'\n' { '\n' } else { ' ' })
            .collect();
        repaired.replace_range(start..end, &blank);
        skipped.push((Diagnostic::new(span, message), start..end));
        if skipped.len() >= MAX_SYNTAX_ERRORS {
            break;
        }
        error = PtxParser::parse(Rule::module, &repaired).err();
    }
    (repaired, skipped)
}

/// The inside of the parenthesised parameter list of a function header (`.entry`/`.func`)
/// that holds byte `pos`, if it lies in one.
fn header_list(bytes: &[u8], pos: usize) -> Option<std::ops::Range<usize>> {
    let mut depth = 0usize;
    let mut open = None;
    for i in (0..pos.min(bytes.len())).rev() {
        match bytes[i] {
            b')' => depth += 1,
            b'(' if depth == 0 => {
                open = Some(i);
                break;
            }
            b'(' => depth -= 1,
            b';' | b'{' | b'}' => return None,
            _ => {}
        }
    }
    let open = open?;
    let head = &bytes[statement_start(bytes, open)..open];
    let is_header = |kw: &[u8]| head.windows(kw.len()).any(|w| w == kw);
    if !(is_header(b".entry") || is_header(b".func")) {
        return None;
    }
    let mut depth = 0usize;
    for (j, &c) in bytes.iter().enumerate().skip(pos) {
        match c {
            b'(' => depth += 1,
            b')' if depth == 0 => return Some(open + 1..j),
            b')' => depth -= 1,
            b';' | b'{' | b'}' => return None,
            _ => {}
        }
    }
    None
}

/// A statement's text from its opcode on: without the labels and the guard before it.
fn statement_opcode(statement: &str) -> &str {
    let mut rest = statement.trim_start();
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = &rest[..word_end];
        if word.starts_with('@') {
            rest = rest[word_end..].trim_start();
        } else if let Some(colon) = word.find(':') {
            rest = rest[colon + 1..].trim_start();
        } else {
            return rest;
        }
    }
}

/// Where the statement holding byte `pos` starts: after the previous `;`, or after a brace
/// that stands at the start or end of its line (a block's, not a vector operand's).
fn statement_start(bytes: &[u8], pos: usize) -> usize {
    let line_blank = |range: &[u8]| range.iter().all(|c| c.is_ascii_whitespace());
    (0..pos)
        .rev()
        .find(|&i| match bytes[i] {
            b';' => true,
            b'{' | b'}' => {
                let line_start = bytes[..i]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |j| j + 1);
                let line_end = bytes[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(bytes.len(), |j| i + j);
                line_blank(&bytes[line_start..i]) || line_blank(&bytes[i + 1..line_end])
            }
            _ => false,
        })
        .map_or(0, |i| i + 1)
}

/// Finds the first bracket that opens beyond [`MAX_NESTING`], skipping comments and strings.
fn too_deep(text: &str) -> Option<Span> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += 1;
                }
            }
            b'{' | b'(' | b'[' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(Span {
                        start: i,
                        end: i + 1,
                    });
                }
            }
            b'}' | b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Turns pest's error into a message naming the offending text and what was expected.
fn syntax_error(text: &str, e: &pest::error::Error<Rule>) -> (Span, String) {
    let pos = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((s, _)) => s,
    };
    let found: String = text[pos..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ';' && *c != ',')
        .take(40)
        .collect();
    let span = Span {
        start: pos,
        end: pos + found.len().max(1),
    };
    let expected = match &e.variant {
        pest::error::ErrorVariant::ParsingError { positives, .. } if !positives.is_empty() => {
            let mut names: Vec<&str> = positives.iter().map(|r| rule_name(*r)).collect();
            names.dedup();
            format!("; expected {}", names.join(" or "))
        }
        _ => String::new(),
    };
    let next = text[pos..].chars().find(|c| !c.is_whitespace());
    let message = if let (true, Some(c)) = (found.is_empty(), next) {
        format!("syntax error: unexpected `{c}`{expected}")
    } else if found.is_empty() {
        format!("syntax error: unexpected end of input{expected}")
    } else {
        format!("syntax error: unexpected `{found}`{expected}")
    };
    (span, message)
}

fn rule_name(r: Rule) -> &'static str {
    match r {
        Rule::EOI => "end of input",
        Rule::operand => "an operand",
        Rule::instruction | Rule::head | Rule::opcode => "an instruction",
        Rule::ident => "an identifier",
        Rule::reg_name => "a register",
        Rule::type_mod => "a type such as .u32",
        Rule::int_lit => "an integer",
        Rule::imm => "an immediate",
        Rule::version_num => "a version number",
        Rule::top_item | Rule::function | Rule::module_var => "a directive or function",
        Rule::statement | Rule::label_def | Rule::reg_decl | Rule::body_var => "a statement",
        Rule::body => "`{`",
        Rule::params | Rule::ret_params => "`(`",
        Rule::param_decl | Rule::param_space => "a parameter",
        _ => "valid PTX",
    }
}

pub(crate) fn span_of(p: &Pair<Rule>) -> Span {
    Span {
        start: p.as_span().start(),
        end: p.as_span().end(),
    }
}

/// A name in a function's scope.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Name {
    Reg(RegId),
    Var(VarId),
    /// A vector register (`.reg .v2 .u32 %v`): its elements are the registers `first`,
    /// `first + 1`, … (`len` of them), named `%v.x`, `%v.y`, … (`.r .g .b .a` alias them).
    Vector {
        first: RegId,
        len: u8,
    },
}

/// The element names of a vector register, by position: `.x .y .z .w` and `.r .g .b .a`.
pub(crate) const VECTOR_ELEMENTS: [[&str; 2]; 4] = [["x", "r"], ["y", "g"], ["z", "b"], ["w", "a"]];

/// What the AST does not keep of a function's header: which parameters were vector
/// registers (each became one scalar register per element in `Function::params`/`rets`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Header {
    /// Per declared parameter, in order: how many entries of `Function::params` it holds (1
    /// for a scalar, 2 or 4 for a `.reg .v2`/`.v4` parameter).
    pub(crate) params: Vec<u8>,
    /// The same for the return parameters.
    pub(crate) rets: Vec<u8>,
    /// A `.param` array of vectors (`.param .v2 .u32 q[1]`), by parameter index: ptxas takes
    /// no call argument for one.
    pub(crate) vector_arrays: Vec<bool>,
    /// The vector registers among the parameters: name, first element register, length.
    pub(crate) vectors: Vec<(String, RegId, u8)>,
    /// The header had a syntax error: its body is not checked, and calls of it are not
    /// checked against its parameters (each would repeat that one error).
    pub(crate) broken: bool,
    /// Where the function is first declared (a prototype's start, else its definition's):
    /// calls before that point are errors, as in ptxas.
    pub(crate) declared_at: usize,
}

struct ModuleBuilder<'s> {
    source: &'s Source,
    /// Byte offset of each line's start, for instruction line numbers.
    line_starts: Vec<usize>,
    diags: Vec<Diagnostic>,
    module_vars: HashMap<String, u32>,
    /// The space of each module variable, by index.
    module_var_spaces: Vec<Space>,
    funcs: HashMap<String, FuncId>,
    /// What the AST does not keep of each function's header, by function id.
    headers: Vec<Header>,
    /// Statements recovery skipped (syntax errors, with the bytes they covered): inside a
    /// function body one refuses that function, elsewhere it is an error of the module.
    skipped: Vec<(Diagnostic, std::ops::Range<usize>)>,
}

impl<'s> ModuleBuilder<'s> {
    fn err(&mut self, span: Span, msg: impl Into<String>) {
        self.diags.push(Diagnostic::new(span, msg));
    }

    fn build(&mut self, tree: Pair<'s, Rule>) -> Module {
        let mut module = Module {
            version: (0, 0),
            target: Vec::new(),
            address_size: 64,
            vars: Vec::new(),
            functions: Vec::new(),
            source: self.source.clone(),
        };
        let items: Vec<Pair<Rule>> = tree.into_inner().collect();
        // First pass: directives, module variables and every function's signature, so that
        // calls may name functions defined later.
        let mut bodies: Vec<(FuncId, Pair<Rule>)> = Vec::new();
        // ptxas: "Missing .version directive at start of file".
        if items.first().is_none_or(|i| i.as_rule() != Rule::version) {
            let span = items.first().map_or(Span::default(), |i| {
                let s = span_of(i);
                Span {
                    start: s.start,
                    end: s.start,
                }
            });
            self.err(span, "a module starts with a `.version` directive");
        }
        for item in &items {
            match item.as_rule() {
                Rule::version => {
                    let num = item.clone().into_inner().next().unwrap();
                    let (maj, min) = num.as_str().split_once('.').unwrap();
                    match (maj.parse(), min.parse()) {
                        (Ok(a), Ok(b)) => module.version = (a, b),
                        _ => self.err(span_of(&num), "invalid .version number"),
                    }
                }
                Rule::target => {
                    module.target = item
                        .clone()
                        .into_inner()
                        .map(|t| t.as_str().to_string())
                        .collect()
                }
                Rule::address_size => {
                    let lit = item.clone().into_inner().next().unwrap();
                    match literal::parse_int(lit.as_str()) {
                        Some(32) => module.address_size = 32,
                        Some(64) => module.address_size = 64,
                        _ => self.err(span_of(&lit), ".address_size must be 32 or 64"),
                    }
                    if module.address_size == 32 {
                        self.err(span_of(item), "only .address_size 64 is supported");
                    }
                }
                Rule::module_var => {
                    if let Some(var) = self.var_decl(item.clone(), VarRole::Body, true) {
                        if self.module_vars.contains_key(&var.name) {
                            self.err(span_of(item), format!("duplicate variable `{}`", var.name));
                        }
                        self.module_vars
                            .insert(var.name.clone(), module.vars.len() as u32);
                        self.module_var_spaces.push(var.space);
                        module.vars.push(var);
                    }
                }
                Rule::function => {
                    let (func, body, mut header) = self.signature(item.clone());
                    // A syntax error that recovery blanked inside the header (between the
                    // function's start and its body).
                    let head_end = body.as_ref().map_or(func.span.end, |b| b.as_span().start());
                    header.broken = self
                        .skipped
                        .iter()
                        .any(|(_, r)| r.start >= func.span.start && r.end <= head_end);
                    header.declared_at = func.span.start;
                    match self.funcs.get(&func.name).copied() {
                        Some(id) => {
                            let prev = &mut module.functions[id.0 as usize];
                            if body.is_some() && prev.body.is_some() {
                                self.err(
                                    func.span,
                                    format!("duplicate definition of `{}`", func.name),
                                );
                            } else if body.is_some() {
                                *prev = func;
                                header.declared_at = self.headers[id.0 as usize].declared_at;
                                self.headers[id.0 as usize] = header;
                                bodies.push((id, body.unwrap()));
                            }
                        }
                        None => {
                            let id = FuncId(module.functions.len() as u32);
                            self.funcs.insert(func.name.clone(), id);
                            module.functions.push(func);
                            self.headers.push(header);
                            if let Some(body) = body {
                                bodies.push((id, body));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let mut skipped = std::mem::take(&mut self.skipped);
        for (id, body) in bodies {
            // The module keeps the signature while the body is built, for recursive calls.
            let mut func = module.functions[id.0 as usize].clone();
            let before = self.diags.len();
            // A statement that did not parse inside this body: the function cannot run, the
            // rest of the module can (PTX we have no grammar for reads as a syntax error).
            let inside = |r: &std::ops::Range<usize>| {
                let b = body.as_span();
                r.start >= b.start() && r.end <= b.end()
            };
            let (mine, rest): (Vec<_>, Vec<_>) = skipped.into_iter().partition(|(_, r)| inside(r));
            skipped = rest;
            for (d, range) in mine {
                // An instruction ptxjit does not have refuses the function; any other
                // statement that does not parse is an error of the module.
                let opcode: String = statement_opcode(&self.source.text[range])
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if opcode.is_empty() || instr::OPCODES.contains(&opcode.as_str()) {
                    self.diags.push(d);
                } else {
                    self.diags.push(Diagnostic::unsupported(
                        d.span,
                        format!("unsupported instruction `{opcode}`: {}", d.message),
                    ));
                }
            }
            // A header with a syntax error: that error is the one to see, not what follows
            // from the parameters it lost.
            if self.headers[id.0 as usize].broken {
                module.functions[id.0 as usize] = func;
                continue;
            }
            self.function_body(&module, id, &mut func, body);
            // A body whose first problem is something not supported yet refuses its function
            // alone (what follows may be its consequence: uses of a refused declaration).
            if self.diags.get(before).is_some_and(|d| d.unsupported) {
                func.refused = self.diags.split_off(before);
                func.body = None;
            }
            module.functions[id.0 as usize] = func;
        }
        // Syntax errors outside function bodies are errors of the module.
        self.diags.extend(skipped.into_iter().map(|(d, _)| d));
        refuse_callers(&mut module);
        self.count_static_shared(&mut module);
        self.diags.sort_by_key(|d| d.span.start);
        inline::inline_sync_calls(&mut module);
        module
    }

    /// Gives each function its static shared bytes as ptxas counts them, and refuses a
    /// kernel over ptxas's limit as ptxas does ("Entry function uses too much shared data").
    fn count_static_shared(&mut self, module: &mut Module) {
        let counts = crate::block::ptxas_counts(module);
        for (f, count) in module.functions.iter_mut().zip(counts) {
            f.static_shared = count;
            if f.kind == FuncKind::Entry && count > MAX_STATIC_SHARED_BYTES {
                self.err(
                    f.span,
                    format!(
                        "kernel `{}` uses {count} bytes of static shared memory (its \
                         `.shared` variables and those of the functions it calls); ptxas \
                         allows {MAX_STATIC_SHARED_BYTES}",
                        f.name
                    ),
                );
            }
        }
    }

    /// Parses a variable declaration (`module_var`, `body_var` or `param_decl`).
    fn var_decl(
        &mut self,
        pair: Pair<'s, Rule>,
        role: VarRole,
        module_level: bool,
    ) -> Option<VarDecl> {
        let span = span_of(&pair);
        let mut space = Space::Param;
        let mut align = None;
        let mut ty = None;
        let mut name = String::new();
        let mut dims: Vec<Option<usize>> = Vec::new();
        let mut init: Option<Pair<Rule>> = None;
        let mut vec = 1;
        let mut external = false;
        let mut common = None;
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::linkage => {
                    // ptxas: "Parsing error near '.shared'" after a linkage in a body.
                    if !module_level {
                        let text = p.as_str();
                        self.err(
                            span_of(&p),
                            format!("`{text}` is for module-level variables"),
                        );
                    }
                    external |= p.as_str() == ".extern";
                }
                Rule::common => common = Some(span_of(&p)),
                Rule::var_space | Rule::param_space => {
                    space = Space::from_ptx(&p.as_str()[1..]).expect("grammar spaces are known")
                }
                Rule::align => {
                    let lit = p.into_inner().next().unwrap();
                    match literal::parse_int(lit.as_str()) {
                        Some(a) if a > 0 && (a as u64).is_power_of_two() && a <= 4096 => {
                            align = Some(a as u32)
                        }
                        _ => self.err(span_of(&lit), "alignment must be a power of two up to 4096"),
                    }
                }
                Rule::vec_mod => vec = if p.as_str() == ".v2" { 2 } else { 4 },
                Rule::type_mod => ty = self.type_of(&p),
                Rule::ident | Rule::reg_name => name = p.as_str().to_string(),
                Rule::array_dim => {
                    let n = p
                        .clone()
                        .into_inner()
                        .next()
                        .map(|l| literal::parse_int(l.as_str()));
                    match n {
                        None => dims.push(None),
                        Some(Some(n)) if n > 0 && n <= (1 << 30) => dims.push(Some(n as usize)),
                        Some(_) => self.err(span_of(&p), "array size must be between 1 and 2^30"),
                    }
                }
                Rule::initializer => init = Some(p),
                Rule::ptr_attr => {}
                r => unreachable!("unexpected {r:?} in a declaration"),
            }
        }
        // ptxas: ".common variables must be declared in .global space".
        if let Some(at) = common
            && space != Space::Global
        {
            self.err(at, "`.common` variables must be in the .global space");
        }
        let ty = ty?;
        if vec > 1 && ty == Type::Pred {
            self.err(span, "a predicate cannot be a vector");
            return None;
        }
        // ptxas: "Vector type too large, exceeds 128 bit limit".
        if ty.bits() * vec as u32 > 128 {
            self.err(
                span,
                format!(".v{vec} of {ty} is wider than the 128 bits a vector may hold"),
            );
            return None;
        }
        // ptxas: "Variable cannot be allocated in .param state space", on every target; an
        // array of vectors is a .param variable.
        if space == Space::Param && vec > 1 && dims.is_empty() {
            self.err(
                span,
                format!(
                    "a vector .param variable must be an array (`{name}[1]`): ptxas cannot allocate `.param .v{vec}` alone"
                ),
            );
        }
        if ty == Type::Pred {
            self.err(span, "predicates cannot be stored in memory");
            return None;
        }
        if module_level && !matches!(space, Space::Global | Space::Const | Space::Shared) {
            self.err(
                span,
                format!("module-level {space} variables are not supported"),
            );
            return None;
        }
        let elem = ty.bytes() * vec;
        let mut count = 1usize;
        let mut unsized_array = false;
        for d in &dims {
            match d {
                Some(n) => count = count.saturating_mul(*n),
                None => unsized_array = true,
            }
        }
        let mut bytes = Vec::new();
        let mut relocs = Vec::new();
        if let Some(init) = init {
            if !matches!(space, Space::Global | Space::Const) {
                self.err(
                    span_of(&init),
                    "only .global and .const variables take initialisers",
                );
            }
            self.flatten_init(init, ty, &mut bytes, &mut relocs);
            if unsized_array {
                count = bytes.len() / elem.max(1);
            } else if bytes.len() > count * elem {
                self.err(
                    span,
                    format!("initialiser has more elements than `{name}` holds"),
                );
            }
        } else if unsized_array && space == Space::Shared && external {
            // `.extern .shared .b8 smem[]`: the launch's dynamic shared memory.
            count = 0;
        } else if unsized_array && space == Space::Shared {
            // ptxas: "Non-external variable 'smem' has incomplete type".
            self.err(
                span,
                format!(
                    "`.shared` array `{name}` of no size must be `.extern` (dynamic shared memory)"
                ),
            );
        } else if unsized_array && role == VarRole::Body {
            self.err(
                span,
                format!("array `{name}` needs a size or an initialiser"),
            );
        }
        let size = count.saturating_mul(elem);
        if size > (1 << 30) {
            self.err(span, format!("variable `{name}` is larger than 1 GiB"));
            return None;
        }
        if !bytes.is_empty() {
            bytes.resize(size, 0);
        }
        Some(VarDecl {
            name,
            space,
            ty,
            align: align.unwrap_or(ty.bytes() as u32 * vec as u32),
            size,
            init: bytes,
            role,
            dynamic: unsized_array && space == Space::Shared && count == 0,
            relocs,
        })
    }

    fn flatten_init(
        &mut self,
        p: Pair<'s, Rule>,
        ty: Type,
        out: &mut Vec<u8>,
        relocs: &mut Vec<Reloc>,
    ) {
        for item in p.into_inner() {
            match item.as_rule() {
                Rule::initializer => self.flatten_init(item, ty, out, relocs),
                Rule::init_addr => {
                    let span = span_of(&item);
                    let mut it = item.into_inner();
                    let name = it.next().unwrap();
                    let addend = it
                        .next()
                        .and_then(|l| literal::parse_int(l.as_str()))
                        .and_then(|v| i64::try_from(v).ok())
                        .unwrap_or(0);
                    if ty.bits() != 64 || ty.is_float() {
                        self.err(
                            span,
                            "an address in an initialiser needs a 64-bit integer type",
                        );
                    }
                    match self.module_vars.get(name.as_str()) {
                        Some(&t)
                            if matches!(
                                self.module_var_spaces[t as usize],
                                Space::Shared | Space::Local | Space::Param
                            ) =>
                        {
                            self.err(
                                span_of(&name),
                                "only .global and .const variables have addresses at load time",
                            )
                        }
                        Some(&target) => relocs.push(Reloc {
                            offset: out.len(),
                            target,
                            addend,
                        }),
                        None => self.err(
                            span_of(&name),
                            format!(
                                "`{}` is not a module variable declared before this one",
                                name.as_str()
                            ),
                        ),
                    }
                    out.extend_from_slice(&[0; 8][..ty.bytes()]);
                }
                Rule::imm => {
                    let span = span_of(&item);
                    match instr::immediate(&item) {
                        Some(imm) => {
                            if let Err(m) = instr::check_imm(imm, ty) {
                                self.err(span, m);
                            }
                            out.extend_from_slice(&imm.bits_for(ty).to_le_bytes()[..ty.bytes()]);
                        }
                        None => self.err(span, "invalid literal"),
                    }
                }
                _ => {}
            }
        }
    }

    fn type_of(&mut self, p: &Pair<'s, Rule>) -> Option<Type> {
        let t = Type::from_ptx(&p.as_str()[1..]);
        match t {
            None => self.err(
                span_of(p),
                format!("type `{}` is not supported", p.as_str()),
            ),
            // As ptxas: the bfloat16 types name instruction types only.
            Some(Type::BF16 | Type::BF16x2) => {
                self.err(
                    span_of(p),
                    format!(
                        "`{}` is an instruction type only; declare .b16 or .b32",
                        p.as_str()
                    ),
                );
                return None;
            }
            Some(_) => {}
        }
        t
    }

    /// A function's header: kind, name, parameters. Returns the body pair when there is one,
    /// and what the AST does not keep of the header.
    fn signature(&mut self, pair: Pair<'s, Rule>) -> (Function, Option<Pair<'s, Rule>>, Header) {
        let mut f = placeholder_function();
        f.span = span_of(&pair);
        let mut body = None;
        let mut header = Header::default();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::linkage => f.linkage = Linkage::from_ptx(&p.as_str()[1..]),
                Rule::entry_kw => f.kind = FuncKind::Entry,
                Rule::func_kw => f.kind = FuncKind::Func,
                Rule::ident => f.name = p.as_str().to_string(),
                Rule::ret_params | Rule::params => {
                    let is_ret = p.as_rule() == Rule::ret_params;
                    for (i, decl) in p.into_inner().enumerate() {
                        let role = if is_ret {
                            VarRole::Ret(i as u32)
                        } else {
                            VarRole::Param(i as u32)
                        };
                        let dspan = span_of(&decl);
                        let is_reg = decl.clone().into_inner().next().unwrap().as_str() == ".reg";
                        let vec = decl
                            .clone()
                            .into_inner()
                            .find(|p| p.as_rule() == Rule::vec_mod)
                            .map_or(1, |p| if p.as_str() == ".v2" { 2u8 } else { 4 });
                        let is_array = decl
                            .clone()
                            .into_inner()
                            .any(|p| p.as_rule() == Rule::array_dim);
                        if is_reg && is_array {
                            self.err(dspan, "a .reg parameter cannot be an array");
                        }
                        let Some(var) = self.var_decl(decl, role, false) else {
                            continue;
                        };
                        if is_reg && f.kind == FuncKind::Entry {
                            self.err(dspan, "kernel parameters must be in .param space");
                        }
                        let list = if is_ret { &mut f.rets } else { &mut f.params };
                        let mut width = 1;
                        if is_reg {
                            // A vector register parameter: one scalar register per element.
                            let first = RegId(f.regs.len() as u32);
                            if vec > 1 {
                                for names in &VECTOR_ELEMENTS[..vec as usize] {
                                    f.regs.push(RegDecl {
                                        name: format!("{}.{}", var.name, names[0]),
                                        ty: var.ty,
                                    });
                                    list.push(Param::Reg(RegId(f.regs.len() as u32 - 1)));
                                }
                                header.vectors.push((var.name, first, vec));
                                width = vec;
                            } else {
                                f.regs.push(RegDecl {
                                    name: var.name,
                                    ty: var.ty,
                                });
                                list.push(Param::Reg(first));
                            }
                        } else {
                            f.vars.push(var);
                            list.push(Param::Mem(VarId::Function(f.vars.len() as u32 - 1)));
                        }
                        if is_ret {
                            header.rets.push(width);
                        } else {
                            header.params.push(width);
                            header.vector_arrays.push(!is_reg && vec > 1);
                        }
                    }
                }
                Rule::body => body = Some(p),
                _ => {}
            }
        }
        if f.kind == FuncKind::Entry && !f.rets.is_empty() {
            self.err(f.span, "a kernel (.entry) cannot return values");
        }
        // ptxas wants several return parameters in .reg space ("Multiple return parameters
        // require .register state space"); ptxjit still runs them in .param space, which
        // its own tests and host interfaces use.
        (f, body, header)
    }

    fn function_body(
        &mut self,
        module: &Module,
        id: FuncId,
        func: &mut Function,
        body: Pair<'s, Rule>,
    ) {
        let mut labels = HashMap::new();
        self.collect_labels(body.clone(), &mut labels);
        let mut fb = FnBuilder {
            mb: self,
            module,
            scopes: vec![HashMap::new()],
            labels,
            label_pos: Vec::new(),
            body: Vec::new(),
        };
        fb.label_pos = vec![usize::MAX; fb.labels.len()];
        // Parameters are in the outermost scope.
        for (i, v) in func.vars.iter().enumerate() {
            fb.scopes[0].insert(v.name.clone(), Name::Var(VarId::Function(i as u32)));
        }
        for (i, r) in func.regs.iter().enumerate() {
            fb.scopes[0].insert(r.name.clone(), Name::Reg(RegId(i as u32)));
        }
        // Vector register parameters: the whole vector, and the `.r .g .b .a` spellings of
        // its elements (`.x .y .z .w` are the registers' own names).
        for (name, first, len) in &fb.mb.headers[id.0 as usize].vectors.clone() {
            let (first, len) = (*first, *len);
            fb.scopes[0].insert(name.clone(), Name::Vector { first, len });
            for (k, names) in VECTOR_ELEMENTS[..len as usize].iter().enumerate() {
                let element = Name::Reg(RegId(first.0 + k as u32));
                fb.scopes[0].insert(format!("{name}.{}", names[1]), element);
            }
        }
        fb.block(func, body);
        let FnBuilder {
            body, label_pos, ..
        } = fb;
        func.body = Some(body);
        func.labels = label_pos;
    }

    fn collect_labels(
        &mut self,
        body: Pair<'s, Rule>,
        labels: &mut HashMap<String, (LabelId, Span)>,
    ) {
        for st in body.into_inner() {
            match st.as_rule() {
                Rule::label_def => {
                    let id = st.clone().into_inner().next().unwrap();
                    let name = id.as_str().to_string();
                    if labels.contains_key(&name) {
                        self.err(span_of(&id), format!("duplicate label `{name}`"));
                    } else {
                        let n = labels.len() as u32;
                        labels.insert(name, (LabelId(n), span_of(&id)));
                    }
                }
                Rule::body => self.collect_labels(st, labels),
                _ => {}
            }
        }
    }
}

/// Refuses every function that calls a refused one (until none is left), naming the callee
/// and its first reason at the call.
fn refuse_callers(module: &mut Module) {
    loop {
        let mut changed = false;
        for i in 0..module.functions.len() {
            let Some(body) = &module.functions[i].body else {
                continue;
            };
            let call = body.iter().find_map(|ins| match &ins.inst {
                Inst::Call { func, .. } if !module.func(*func).refused.is_empty() => {
                    Some((ins.span, *func))
                }
                _ => None,
            });
            if let Some((span, callee)) = call {
                let callee = module.func(callee);
                let message = format!(
                    "calls `{}`, which cannot run: {}",
                    callee.name, callee.refused[0].message
                );
                let f = &mut module.functions[i];
                f.refused = vec![Diagnostic::unsupported(span, message)];
                f.body = None;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

fn placeholder_function() -> Function {
    Function {
        name: String::new(),
        kind: FuncKind::Func,
        linkage: None,
        params: Vec::new(),
        rets: Vec::new(),
        regs: Vec::new(),
        vars: Vec::new(),
        body: None,
        labels: Vec::new(),
        span: Span::default(),
        refused: Vec::new(),
        inlined: false,
        inlined_calls: Vec::new(),
        static_shared: 0,
    }
}

/// Builds one function body: scopes, declarations, labels and instructions.
pub(crate) struct FnBuilder<'a, 's> {
    mb: &'a mut ModuleBuilder<'s>,
    pub(crate) module: &'a Module,
    scopes: Vec<HashMap<String, Name>>,
    pub(crate) labels: HashMap<String, (LabelId, Span)>,
    label_pos: Vec<usize>,
    body: Vec<Instruction>,
}

impl<'a, 's> FnBuilder<'a, 's> {
    pub(crate) fn err(&mut self, span: Span, msg: impl Into<String>) {
        self.mb.err(span, msg);
    }

    /// Reports a diagnostic as it is (an error, or something not supported yet).
    pub(crate) fn report(&mut self, d: Diagnostic) {
        self.mb.diags.push(d);
    }

    /// Reports valid PTX that ptxjit does not support yet: it refuses the function.
    pub(crate) fn unsupported(&mut self, span: Span, msg: impl Into<String>) {
        self.mb.diags.push(Diagnostic::unsupported(span, msg));
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line_of(&self, offset: usize) -> u32 {
        self.mb.line_starts.partition_point(|&s| s <= offset) as u32
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Name> {
        for scope in self.scopes.iter().rev() {
            if let Some(n) = scope.get(name) {
                return Some(*n);
            }
        }
        self.mb
            .module_vars
            .get(name)
            .map(|&i| Name::Var(VarId::Module(i)))
    }

    pub(crate) fn func_id(&self, name: &str) -> Option<FuncId> {
        self.mb.funcs.get(name).copied()
    }

    fn declare(&mut self, name: String, n: Name, span: Span) {
        use std::collections::hash_map::Entry;
        match self.scopes.last_mut().unwrap().entry(name) {
            Entry::Occupied(e) => {
                let msg = format!("`{}` is already declared in this scope", e.key());
                self.mb.err(span, msg);
            }
            Entry::Vacant(e) => {
                e.insert(n);
            }
        }
    }

    fn block(&mut self, func: &mut Function, body: Pair<'s, Rule>) {
        for st in body.into_inner() {
            let span = span_of(&st);
            match st.as_rule() {
                Rule::label_def => {
                    let name = st.into_inner().next().unwrap().as_str();
                    let id = self.labels[name].0;
                    self.label_pos[id.0 as usize] = self.body.len();
                }
                Rule::reg_decl => self.reg_decl(func, st),
                Rule::body_var => {
                    if let Some(var) = self.mb.var_decl(st, VarRole::Body, false) {
                        if !matches!(var.space, Space::Local | Space::Param | Space::Shared) {
                            self.unsupported(
                                span,
                                format!(
                                    "{} variables inside a function are not supported",
                                    var.space
                                ),
                            );
                            continue;
                        }
                        let id = VarId::Function(func.vars.len() as u32);
                        let name = var.name.clone();
                        func.vars.push(var);
                        self.declare(name, Name::Var(id), span);
                    }
                }
                Rule::body => {
                    self.scopes.push(HashMap::new());
                    self.block(func, st);
                    self.scopes.pop();
                }
                Rule::instruction => {
                    let (insts, temps) = instr::build(self, func, st);
                    func.regs.extend(temps);
                    self.body.extend(insts);
                }
                _ => {}
            }
        }
    }

    fn reg_decl(&mut self, func: &mut Function, st: Pair<'s, Rule>) {
        let mut ty = None;
        let mut vec = 1u8;
        for p in st.into_inner() {
            match p.as_rule() {
                Rule::vec_mod => vec = if p.as_str() == ".v2" { 2 } else { 4 },
                Rule::type_mod => {
                    ty = self.mb.type_of(&p);
                    let Some(t) = ty else { return };
                    // ptxas: "Predicate type can only be used to define scalar register
                    // variables", "Vector type too large, exceeds 128 bit limit".
                    if vec > 1 && t == Type::Pred {
                        self.err(span_of(&p), "a predicate register cannot be a vector");
                        return;
                    }
                    if t.bits() * vec as u32 > 128 {
                        self.err(
                            span_of(&p),
                            format!(".v{vec} of {t} is wider than the 128 bits a vector may hold"),
                        );
                        return;
                    }
                }
                Rule::reg_item => {
                    let span = span_of(&p);
                    let mut inner = p.into_inner();
                    let name = inner.next().unwrap().as_str().to_string();
                    let ty = ty.unwrap();
                    match inner.next() {
                        None => self.declare_reg(func, name, ty, vec, span),
                        Some(n) => match literal::parse_int(n.as_str()) {
                            Some(n) if (0..=65536).contains(&n) => {
                                for i in 0..n {
                                    self.declare_reg(func, format!("{name}{i}"), ty, vec, span);
                                }
                            }
                            _ => {
                                self.err(span_of(&n), "register range must be between 0 and 65536")
                            }
                        },
                    }
                }
                _ => {}
            }
        }
    }

    /// Declares register `name`; a vector register (`vec` 2 or 4) is one register per
    /// element, named `name.x`, `name.y`, … and also reachable as `name.r`, `name.g`, ….
    fn declare_reg(&mut self, func: &mut Function, name: String, ty: Type, vec: u8, span: Span) {
        let first = RegId(func.regs.len() as u32);
        if vec == 1 {
            func.regs.push(RegDecl {
                name: name.clone(),
                ty,
            });
            self.declare(name, Name::Reg(first), span);
            return;
        }
        for (k, names) in VECTOR_ELEMENTS[..vec as usize].iter().enumerate() {
            let element = RegId(first.0 + k as u32);
            func.regs.push(RegDecl {
                name: format!("{name}.{}", names[0]),
                ty,
            });
            for n in names {
                self.declare(format!("{name}.{n}"), Name::Reg(element), span);
            }
        }
        self.declare(name, Name::Vector { first, len: vec }, span);
    }
}
