//! `codeloop-engine-child`: the children codeloop starts of its own binary
//! (`inputs::child_main`: the sandbox helper, the describer of an input
//! file) as a program of the engine's. Cargo builds a package's own
//! binaries for its tests, so the engine's tests run this one, fresh,
//! through `CARGO_BIN_EXE_codeloop-engine-child`. An installed codeloop
//! needs no other file: it serves them itself.

use std::process::ExitCode;

fn main() -> ExitCode {
    codeloop_engine::inputs::child_main().unwrap_or_else(|| {
        eprintln!(
            "codeloop-engine-child: started by codeloop's tests as the sandbox helper or to \
             describe an input file, never by hand"
        );
        ExitCode::from(2)
    })
}
