//! `codeloop-sandbox-helper`: the sandbox's helper as a program of its own,
//! what `codeloop` does when started with `HELPER_ARG`. Cargo builds a
//! package's own binaries for its tests and benches, so the sandbox's
//! tests run this one, fresh, through `CARGO_BIN_EXE_codeloop-sandbox-helper`.
//! An installed codeloop needs no other file: it is its own helper.

use std::process::ExitCode;

use codeloop_sandbox::helper;

fn main() -> ExitCode {
    if helper::started_as_helper() {
        return helper::main();
    }
    eprintln!(
        "codeloop-sandbox-helper: codeloop's sandbox helper, started by codeloop itself \
         ({} PLAN); run `codeloop exec` to run a program in the sandbox",
        helper::HELPER_ARG
    );
    ExitCode::from(2)
}
