//! Located diagnostics: `file:line:col`, the source line and a caret under the offending text.

use crate::ast::{Source, Span};
use std::fmt;

/// One problem found in the input, at a place in the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub span: Span,
    pub message: String,
    /// Valid PTX that ptxjit does not run yet (an instruction, a form, a declaration): inside
    /// a function it refuses that function only, the rest of the module still loads.
    pub unsupported: bool,
}

impl Diagnostic {
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            span,
            message: message.into(),
            unsupported: false,
        }
    }
    /// Something valid that ptxjit does not support yet.
    pub fn unsupported(span: Span, message: impl Into<String>) -> Self {
        Diagnostic {
            unsupported: true,
            ..Diagnostic::new(span, message)
        }
    }
}

/// Every problem found in a module; the module is rejected when there is at least one.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    pub source: Source,
    pub diagnostics: Vec<Diagnostic>,
}

impl ParseError {
    pub fn single(source: Source, span: Span, message: impl Into<String>) -> Self {
        ParseError {
            source,
            diagnostics: vec![Diagnostic::new(span, message)],
        }
    }
    /// `(line, col)` of the first diagnostic.
    pub fn first_location(&self) -> Option<(usize, usize)> {
        self.diagnostics
            .first()
            .map(|d| self.source.line_col(d.span.start))
    }
}

/// Renders one located message in the style of rustc/clang.
pub fn render(
    source: &Source,
    span: Span,
    message: &str,
    out: &mut impl fmt::Write,
) -> fmt::Result {
    let (line, col) = source.line_col(span.start);
    let text = source.line_text(span.start);
    writeln!(out, "error: {message}")?;
    writeln!(out, "  --> {}:{}:{}", source.path, line, col)?;
    let gutter = line.to_string().len();
    writeln!(out, "{:gutter$} |", "")?;
    writeln!(out, "{line} | {text}")?;
    // The caret covers the span, clipped to the line.
    let line_chars = text.chars().count();
    let width = source.text[span.start.min(source.text.len())..span.end.min(source.text.len())]
        .chars()
        .take_while(|&c| c != '\n')
        .count()
        .clamp(1, (line_chars + 1).saturating_sub(col - 1).max(1));
    let pad: String = text
        .chars()
        .take(col - 1)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    writeln!(out, "{:gutter$} | {pad}{}", "", "^".repeat(width))
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            render(&self.source, d.span, &d.message, f)?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseError {}
