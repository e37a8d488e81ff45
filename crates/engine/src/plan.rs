//! The plan: given with the task, replayed from the cache, or asked of the
//! model and validated as a DAG (asked again with the error when it is not
//! one, or copies the prompt's example; a reply that is code instead is read
//! as a plan when its functions make one). A spec the person edits is
//! validated the same way: a bad edit is a `PlanError` and a notice on the
//! tape, and the session goes on with the spec it had.

use super::cache;
use super::context::{Core, EngineError, Stop};
use super::extract;
use super::named;
use super::prompts::prompt_inputs;
use super::tag::Tag;
use codeloop_session::{
    CodeEvent, CodeSource, Dag, Event, FunctionSpec, NoticeEvent, NoticeLevel, PlanErrorEvent,
    PlanEvent, Purpose, TapeError, TestsEvent,
};

use codeloop_session::PLAN_ATTEMPTS;

/// What a plan reply gave.
enum PlanReply {
    /// A plan, valid as a graph, with a notice for each dependency dropped.
    Plan {
        specs: Vec<FunctionSpec>,
        dropped: Vec<String>,
    },
    /// Code instead of a plan, whose functions make a valid plan.
    Code(extract::CodePlan),
}

/// The plan of a reply to the plan prompt for `task`, or what is wrong with
/// it (said to the model when it is asked again): a plan that copies the
/// prompt's example or placeholders, or is no valid graph. A reply with no
/// plan but code is read as a plan when its functions make one.
fn read_plan(reply: &str, task: &str) -> Result<PlanReply, String> {
    let specs = match extract::extract_plan(reply) {
        Ok(specs) => specs,
        Err(message) => {
            return match extract::plan_from_code(reply) {
                Some(plan) if Dag::new(plan.specs.clone()).is_ok() => Ok(PlanReply::Code(plan)),
                _ => Err(message),
            };
        }
    };
    let extract::Vetted { specs, mut dropped } = extract::vet_plan(specs, task)?;
    Dag::new(specs.clone()).map_err(|e| e.to_string())?;
    // Each function's inputs become its signature: a parameter list, or
    // mended into one, or the plan is asked again.
    let (specs, mended) = extract::params::check(specs)?;
    dropped.extend(mended);
    Ok(PlanReply::Plan { specs, dropped })
}

impl Core {
    /// The plan: given, cached, or asked for. False when there is none.
    pub(crate) async fn plan(&self, cache_key: Option<&str>) -> Result<bool, EngineError> {
        if let Some(given) = &self.given {
            self.record(Event::Plan(PlanEvent {
                specs: given.specs.clone(),
            }))
            .await?;
            for (node, code) in &given.tests {
                self.record(Event::Tests(TestsEvent {
                    node: node.clone(),
                    code: code.clone(),
                    source: CodeSource::Given,
                }))
                .await?;
            }
            return Ok(true);
        }
        if let (Some(dir), Some(key)) = (&self.opts.cache_dir, cache_key)
            && let Some(solved) = cache::load(dir, key)
            && Dag::new(solved.specs.clone()).is_ok()
        {
            self.notice(
                NoticeLevel::Info,
                "this task was solved before with the same model and prompts: replaying the cached solution (its tests run again)".into(),
            )
            .await?;
            self.record(Event::Plan(PlanEvent {
                specs: solved.specs.clone(),
            }))
            .await?;
            for (node, code) in solved.tests {
                self.record(Event::Tests(TestsEvent {
                    node,
                    code,
                    source: CodeSource::Cache,
                }))
                .await?;
            }
            for (node, code) in solved.code {
                self.record(Event::Code(CodeEvent {
                    node,
                    iteration: 1,
                    code,
                    source: CodeSource::Cache,
                    notes: Vec::new(),
                }))
                .await?;
            }
            return Ok(true);
        }
        let task = self.read(|s| s.task.clone());
        if let Some(named) = named::named_function(&task) {
            self.notice(
                NoticeLevel::Info,
                format!(
                    "the task names one function, `{}({})`: it is the plan, with the name and parameters the task gives (no plan asked for)",
                    named.name, named.params
                ),
            )
            .await?;
            self.record(Event::Plan(PlanEvent {
                specs: vec![FunctionSpec {
                    name: named.name,
                    purpose: named.purpose,
                    inputs: named.params,
                    output: named.returns,
                    depends_on: Vec::new(),
                    head: Some(named.head),
                }],
            }))
            .await?;
            return Ok(true);
        }
        self.ask_for_plan(false).await
    }

    /// The task was edited: plan it again. Nodes whose specs did not change
    /// keep their tests and code (the fold of `Plan`); with no usable plan
    /// for the edited task, the plan there is stays (recorded again, so the
    /// tape says the re-plan is over).
    pub(crate) async fn replan(&self) -> Result<(), EngineError> {
        if self.ask_for_plan(true).await? {
            return Ok(());
        }
        self.notice(
            NoticeLevel::Warning,
            "no usable plan for the edited task: the session goes on with the plan it had".into(),
        )
        .await?;
        let specs = self.read(|s| s.specs.clone());
        self.record(Event::Plan(PlanEvent { specs })).await?;
        Ok(())
    }

    /// Ask for a plan (calls tagged `plan`, `plan/2`, ..., or `replan`,
    /// `replan/2`, ... for an edited task) until one is a valid DAG.
    async fn ask_for_plan(&self, replan: bool) -> Result<bool, EngineError> {
        let mut error: Option<String> = None;
        for attempt in 1..=PLAN_ATTEMPTS {
            let Some(reply) = self.plan_call(replan, attempt, &error).await? else {
                return Ok(false);
            };
            let task = self.read(|s| s.task.clone());
            match self.take_plan(read_plan(&reply, &task)).await? {
                None => return Ok(true),
                Some(message) => error = Some(message),
            }
        }
        if replan {
            return Ok(false);
        }
        // Every attempt was answered, and none was a plan: a small model
        // often cannot plan but can write one function. The session goes
        // on with the whole task as one, rather than ending with nothing.
        let (task, files) = self.read(|s| (s.task.clone(), !s.inputs.is_empty()));
        let spec = one_function_plan(&task, files);
        self.notice(
            NoticeLevel::Warning,
            format!(
                "the model gave no usable plan in {PLAN_ATTEMPTS} tries: going on with the whole task as one function, `{}` (edit its spec, or write the plan yourself, to split it)",
                spec.name
            ),
        )
        .await?;
        self.record(Event::Plan(PlanEvent { specs: vec![spec] }))
            .await?;
        Ok(true)
    }

    /// The reply to the plan call of `attempt` (`error`: what was wrong
    /// with the last reply); `None` when the call is not made (skipped,
    /// cancelled, out of budget) or fails: there is no plan to be had.
    async fn plan_call(
        &self,
        replan: bool,
        attempt: u32,
        error: &Option<String>,
    ) -> Result<Option<String>, EngineError> {
        /// A step that stopped: the tape's and the prompts' errors are the
        /// session's; any other stop means no plan.
        fn no_plan(stop: Stop) -> Result<Option<String>, EngineError> {
            match stop {
                Stop::Tape(e) => Err(e.into()),
                Stop::Prompt(e) => Err(e.into()),
                Stop::Skipped | Stop::Cancelled | Stop::Budget | Stop::Failed | Stop::Model => {
                    Ok(None)
                }
            }
        }
        if let Err(stop) = self.may_ask(&Purpose::Plan).await {
            return no_plan(stop);
        }
        let (task, inputs) = self.read(|s| (s.task.clone(), prompt_inputs(&s.inputs)));
        let prompt = self.prompts.render(
            "plan.md",
            minijinja::context! { task, inputs, error => error },
        )?;
        let tag = if replan {
            Tag::Replan { attempt }
        } else {
            Tag::Plan { attempt }
        };
        match self
            .call(Purpose::Plan, tag, self.messages(prompt)?, None)
            .await
        {
            Ok(reply) => Ok(Some(reply)),
            Err(stop) => no_plan(stop),
        }
    }

    /// What a plan reply gave, on the tape: the plan (with a notice for
    /// each dependency dropped), or the plan of its code with that code as
    /// the first versions. `Some(message)`: what was wrong, recorded as a
    /// `PlanError`, to be said when the plan is asked for again.
    async fn take_plan(
        &self,
        read: Result<PlanReply, String>,
    ) -> Result<Option<String>, EngineError> {
        match read {
            Ok(PlanReply::Plan { specs, dropped }) => {
                for message in dropped {
                    self.notice(NoticeLevel::Warning, message).await?;
                }
                self.record(Event::Plan(PlanEvent { specs })).await?;
                Ok(None)
            }
            Ok(PlanReply::Code(plan)) => {
                let names: Vec<String> =
                    plan.specs.iter().map(|s| format!("`{}`", s.name)).collect();
                self.notice(
                    NoticeLevel::Warning,
                    format!(
                        "the plan reply was code, not a plan: its functions ({}) are the plan, with their signatures as specs and the reply's code as their first version",
                        names.join(", ")
                    ),
                )
                .await?;
                self.record(Event::Plan(PlanEvent { specs: plan.specs }))
                    .await?;
                // A node a re-plan kept keeps its code.
                self.tape
                    .append_with(move |s| {
                        let events = plan
                            .code
                            .into_iter()
                            .filter(|(node, _)| {
                                s.nodes.get(node).is_some_and(|n| n.versions.is_empty())
                            })
                            .map(|(node, code)| {
                                Event::Code(CodeEvent {
                                    node,
                                    iteration: 1,
                                    code,
                                    source: CodeSource::PlanReply,
                                    notes: Vec::new(),
                                })
                            })
                            .collect();
                        (events, ())
                    })
                    .await?;
                Ok(None)
            }
            Err(message) => {
                self.record(Event::PlanError(PlanErrorEvent {
                    message: message.clone(),
                }))
                .await?;
                Ok(Some(message))
            }
        }
    }

    /// Record the edit of `node`'s spec (`steer`) and, decided on the same
    /// state, why it is refused if the edited plan is not a valid DAG. The
    /// fold applies the edit only when it is valid (`session::edit_spec`).
    pub(crate) async fn edit_spec(
        &self,
        steer: Event,
        node: String,
        spec: FunctionSpec,
    ) -> Result<(), TapeError> {
        self.tape
            .append_with(move |s| {
                let mut events = vec![steer];
                if let Err(e) = codeloop_session::edit_spec(&s.specs, &node, &spec) {
                    let message = format!("the edited spec of `{node}` is refused: {e}");
                    events.push(Event::PlanError(PlanErrorEvent {
                        message: message.clone(),
                    }));
                    events.push(Event::Notice(NoticeEvent {
                        level: NoticeLevel::Error,
                        message: format!("{message}; the session goes on with the spec it had"),
                    }));
                }
                (events, ())
            })
            .await
            .map(|_| ())
    }
}

/// The plan of a task the model could not plan: one function doing the
/// whole task, named from the task's words (`count_vowels_string` for
/// "count the vowels in a string"), with a real parameter: the path of
/// the file the task came with (`files`), else the data it works on.
fn one_function_plan(task: &str, files: bool) -> FunctionSpec {
    const SMALL: [&str; 20] = [
        "a", "an", "the", "of", "in", "on", "to", "for", "and", "or", "with", "from", "by", "its",
        "is", "are", "be", "whether", "if", "given",
    ];
    let words: Vec<String> = task
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .filter(|w| !SMALL.contains(&w.as_str()))
        .take(4)
        .collect();
    let mut name = words.join("_");
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name = format!("solve_{name}").trim_end_matches('_').to_string();
    }
    const KEYWORDS: [&str; 35] = [
        "false", "none", "true", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    if KEYWORDS.contains(&name.as_str()) {
        name.push_str("_task");
    }
    let purpose: String = task
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect();
    FunctionSpec {
        name,
        purpose,
        inputs: if files { "path: str" } else { "data" }.into(),
        output: String::new(),
        depends_on: Vec::new(),
        head: None,
    }
}

#[cfg(test)]
mod fallback_tests {
    use super::*;

    #[test]
    fn the_one_function_is_named_from_the_task() {
        assert_eq!(
            one_function_plan("count the vowels in a string", false).name,
            "count_vowels_string"
        );
        assert_eq!(one_function_plan("2 + 2?", false).name, "solve_2_2");
        assert_eq!(
            one_function_plan("check whether a string is a palindrome", false).name,
            "check_string_palindrome"
        );
        assert_eq!(one_function_plan("???", false).name, "solve");
        let long = one_function_plan(&format!("Reverse words.\n{}", "x".repeat(500)), false);
        assert_eq!(long.purpose, "Reverse words.");
        assert!(Dag::new(vec![one_function_plan("Sum a list of numbers", false)]).is_ok());
        // Its signature has real parameters (it once had `(what the task gives)`).
        let spec = one_function_plan("count the words in words.txt", true);
        assert_eq!(
            crate::named::head_of(&spec)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
            "def count_words_words_txt(path: str):"
        );
        let spec = one_function_plan("sum a list of numbers", false);
        assert_eq!(
            crate::named::head_of(&spec)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
            "def sum_list_numbers(data):"
        );
    }
}
