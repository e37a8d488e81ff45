//! The Python test harness: runs a node's tests against its code and reports per test.
