//! What kind of failure a `Location` is, as a type: the loop's decisions
//! match on it (`Location::kind`), never on an error type's or a message's
//! words. The words stay on the tape as they were (a Python exception's
//! name, codeloop's own error types below), so a tape of any age reads
//! with its kinds derived from them.

use super::Location;

/// The error type of a run whose test harness failed: codeloop's own.
pub const HARNESS_ERROR: &str = "HarnessError";
/// The error type of a run the sandbox could not make: codeloop's own.
pub const SANDBOX_ERROR: &str = "SandboxError";
/// The error type of a run that ended with no traceback (a signal, an exit
/// code, no test at all).
pub const RUN_ERROR: &str = "RunError";
/// The check's: a function whose body is only its docstring (or `...`).
pub const NO_BODY: &str = "NoBody";
/// The check's: the planned function is not defined.
pub const MISSING_DEFINITION: &str = "MissingDefinition";
/// The check's: an import the sandbox does not allow.
pub const BLOCKED_IMPORT: &str = "BlockedImport";
/// The check's: another node's function defined again.
pub const REDEFINITION: &str = "Redefinition";
/// How the message of a run with no test in it begins.
pub const NO_TEST_RAN: &str = "no test ran";

/// The kind of a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A test's assertion did not hold.
    Assertion,
    /// The code (or a test) raised another exception.
    Exception,
    /// The code does not parse (SyntaxError, IndentationError, TabError).
    Syntax,
    /// The planned function is not defined.
    MissingDefinition,
    /// The function has no body.
    NoBody,
    /// An import the sandbox does not allow.
    BlockedImport,
    /// Another node's function defined again.
    Redefinition,
    /// No test ran (there are none).
    NoTestRan,
    /// A limit was hit (time, CPU, memory, output, files, processes).
    Limit,
    /// The run ended with no traceback (a signal, an exit code).
    Ended,
    /// codeloop's test harness failed: the code was not judged.
    Harness,
    /// The sandbox could not run it: the code was not judged.
    Sandbox,
}

impl FailureKind {
    /// codeloop's own failure, not the code's: the code was not judged.
    pub fn codeloops_own(self) -> bool {
        matches!(self, FailureKind::Harness | FailureKind::Sandbox)
    }

    /// The code cannot even be read as the function: no run can judge it.
    pub fn unreadable(self) -> bool {
        matches!(
            self,
            FailureKind::Syntax | FailureKind::MissingDefinition | FailureKind::NoBody
        )
    }
}

impl Location {
    /// The kind of this failure, from its error type (and, for a run that
    /// ended with no traceback, its message).
    pub fn kind(&self) -> FailureKind {
        match self.error_type.as_str() {
            "AssertionError" => FailureKind::Assertion,
            "SyntaxError" | "IndentationError" | "TabError" => FailureKind::Syntax,
            MISSING_DEFINITION => FailureKind::MissingDefinition,
            NO_BODY => FailureKind::NoBody,
            BLOCKED_IMPORT => FailureKind::BlockedImport,
            REDEFINITION => FailureKind::Redefinition,
            HARNESS_ERROR => FailureKind::Harness,
            SANDBOX_ERROR => FailureKind::Sandbox,
            RUN_ERROR if self.message.starts_with(NO_TEST_RAN) => FailureKind::NoTestRan,
            RUN_ERROR => FailureKind::Ended,
            "Timeout" | "CpuLimit" | "MemoryLimit" | "FileSizeLimit" | "OutputLimit"
            | "DiskLimit" | "ProcessLimit" | "FileCountLimit" => FailureKind::Limit,
            _ => FailureKind::Exception,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(error_type: &str, message: &str) -> FailureKind {
        Location {
            error_type: error_type.into(),
            message: message.into(),
            ..Location::default()
        }
        .kind()
    }

    #[test]
    fn each_error_type_the_tape_holds_has_its_kind() {
        let rows = [
            ("AssertionError", "assert 2 == 4", FailureKind::Assertion),
            (
                "ZeroDivisionError",
                "division by zero",
                FailureKind::Exception,
            ),
            ("KeyError", "'a'", FailureKind::Exception),
            ("SyntaxError", "invalid syntax", FailureKind::Syntax),
            ("IndentationError", "unexpected indent", FailureKind::Syntax),
            ("TabError", "inconsistent use of tabs", FailureKind::Syntax),
            (
                MISSING_DEFINITION,
                "f is not defined",
                FailureKind::MissingDefinition,
            ),
            (NO_BODY, "only a docstring", FailureKind::NoBody),
            (BLOCKED_IMPORT, "socket", FailureKind::BlockedImport),
            (REDEFINITION, "g defined again", FailureKind::Redefinition),
            (
                HARNESS_ERROR,
                "codeloop's test harness failed",
                FailureKind::Harness,
            ),
            (SANDBOX_ERROR, "could not start", FailureKind::Sandbox),
            (
                RUN_ERROR,
                "no test ran: it has no tests",
                FailureKind::NoTestRan,
            ),
            (
                RUN_ERROR,
                "the program was killed by signal 9",
                FailureKind::Ended,
            ),
            ("Timeout", "10 s", FailureKind::Limit),
            ("MemoryLimit", "256 MiB", FailureKind::Limit),
            ("OutputLimit", "1 MiB", FailureKind::Limit),
        ];
        for (error_type, message, kind) in rows {
            assert_eq!(of(error_type, message), kind, "{error_type}: {message}");
        }
        assert!(FailureKind::Harness.codeloops_own());
        assert!(FailureKind::Sandbox.codeloops_own());
        assert!(!FailureKind::Exception.codeloops_own());
        assert!(FailureKind::NoBody.unreadable());
        assert!(!FailureKind::BlockedImport.unreadable());
        // A message that merely mentions it is no such kind.
        assert_eq!(of("ValueError", "no test ran"), FailureKind::Exception);
    }
}
