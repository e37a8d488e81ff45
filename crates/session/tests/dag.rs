//! The plan as a DAG: order, parallel levels, cycles, unknown dependencies, impact.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test says what it expected by failing

use codeloop_session::{Dag, FunctionSpec, PlanError};

fn spec(name: &str, deps: &[&str]) -> FunctionSpec {
    FunctionSpec {
        name: name.into(),
        purpose: String::new(),
        inputs: String::new(),
        output: String::new(),
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
        head: None,
    }
}

/// report depends on stats and top; both depend on parse; load stands alone.
fn diamond() -> Dag {
    Dag::new(vec![
        spec("report", &["stats", "top"]),
        spec("stats", &["parse"]),
        spec("top", &["parse"]),
        spec("parse", &[]),
        spec("load", &[]),
    ])
    .unwrap()
}

#[test]
fn topological_order_puts_dependencies_first_and_keeps_plan_order_among_ties() {
    assert_eq!(
        diamond().topological_order(),
        vec!["parse", "load", "stats", "top", "report"]
    );
}

#[test]
fn levels_group_what_can_run_in_parallel() {
    assert_eq!(
        diamond().levels(),
        vec![vec!["parse", "load"], vec!["stats", "top"], vec!["report"]]
    );
}

#[test]
fn a_failure_blocks_everything_downstream_and_nothing_else() {
    let dag = diamond();
    assert_eq!(dag.impact("parse"), vec!["stats", "top", "report"]);
    assert_eq!(dag.impact("top"), vec!["report"]);
    assert!(dag.impact("load").is_empty());
    assert_eq!(dag.dependencies("report"), vec!["parse", "stats", "top"]);
}

#[test]
fn a_cycle_is_reported_with_its_path() {
    let err = Dag::new(vec![
        spec("a", &["b"]),
        spec("b", &["c"]),
        spec("c", &["a"]),
        spec("d", &[]),
    ])
    .unwrap_err();
    assert_eq!(
        err,
        PlanError::Cycle(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        err.to_string(),
        "the dependencies form a cycle: a -> b -> c -> a"
    );
}

#[test]
fn a_self_dependency_is_a_cycle() {
    let err = Dag::new(vec![spec("a", &["a"])]).unwrap_err();
    assert_eq!(err, PlanError::Cycle(vec!["a".into(), "a".into()]));
}

#[test]
fn unknown_dependencies_duplicates_bad_names_and_empty_plans_are_errors() {
    assert_eq!(
        Dag::new(vec![spec("a", &["nope"])]).unwrap_err(),
        PlanError::UnknownDependency {
            node: "a".into(),
            missing: "nope".into()
        }
    );
    assert_eq!(
        Dag::new(vec![spec("a", &[]), spec("a", &[])]).unwrap_err(),
        PlanError::Duplicate("a".into())
    );
    assert_eq!(
        Dag::new(vec![spec("2fast", &[])]).unwrap_err(),
        PlanError::BadName("2fast".into())
    );
    assert_eq!(Dag::new(vec![]).unwrap_err(), PlanError::Empty);
}

#[test]
fn names_python_accepts_are_accepted_unicode_included_and_keywords_are_not() {
    // Python: `def zähle_wörter(): ...` and `def 数える(): ...` are valid (PEP 3131).
    let dag = Dag::new(vec![
        spec("zähle_wörter", &[]),
        spec("数える", &["zähle_wörter"]),
        spec("_privé2", &[]),
    ]);
    assert!(dag.is_ok(), "{dag:?}");
    for bad in ["def", "None", "a-b", "wört er", "·x", ""] {
        assert_eq!(
            Dag::new(vec![spec(bad, &[])]).unwrap_err(),
            PlanError::BadName(bad.into()),
            "{bad:?}"
        );
    }
}
