//! Evaluation of HumanEval-format problem sets through `exec`.
