//! The walk.
use crate::diagnostic::{Diagnostic, SourceFile};
use oxc_ast::ast::Program;
use std::sync::Arc;
pub(super) fn lint_program(_file: &Arc<SourceFile>, _program: &Program<'_>) -> Vec<Diagnostic> {
    Vec::new()
}
