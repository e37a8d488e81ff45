//! Routing keys and the mouse: a popup first, then the focused pane's table,
//! then the workbench's tables of the mode.
//!
//! Architecture Invariant: what the person meant becomes an engine command
//! or an action here, and nowhere else.
use crossterm::event::{KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::guard::{OnYes, Replacing};
use super::view;
use super::{Action, App, Focus, Message, Mode, Popup, StartRequest};
use crate::describe::{parse_spec, spec_text};
use crate::external_editor::ExternalEdit;
use crate::keymap::{self, GlobalAct, ReplayAct, SteerAct, TapeMove};
use crate::panes::confirm::Confirm;
use crate::panes::editor::{EditTarget, EditorIntent, EditorPopup};
use crate::panes::lineage::LineageIntent;
use crate::panes::palette::PaletteIntent;
use crate::panes::{Handled, Intent};
use crate::timeline::Jump;
use codeloop_session::story::words;
use codeloop_session::{Command, NoticeLevel};

impl App {
    pub(super) fn on_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) {
        // Quit with Control (Ctrl-C) works everywhere, even while typing.
        if key.modifiers.contains(KeyModifiers::CONTROL)
            && keymap::lookup(keymap::COMMON, &key) == Some(GlobalAct::Quit)
        {
            self.listed_from = None;
            self.request_quit(actions);
            return;
        }
        self.flash = None;
        if let Some(popup) = self.popups.pop() {
            self.on_popup_key(popup, key, actions);
            return;
        }
        if self.on_pane_key(key, actions) {
            return;
        }
        match keymap::lookup_global(self.mode_kind(), &key) {
            Some(act) => self.on_global(act, actions),
            None => {
                if self.read_only() && keymap::lookup(keymap::STEER, &key).is_some() {
                    self.say(
                        NoticeLevel::Warning,
                        "read-only: this is a recorded session (replay it live with `codeloop replay --live`)",
                    );
                }
            }
        }
    }

    fn on_popup_key(&mut self, popup: Popup, key: KeyEvent, actions: &mut Vec<Action>) {
        match popup {
            // Any key closes a message, and the help (but the keys that
            // scroll a help taller than the screen).
            Popup::Message(_) => {}
            Popup::Help(mut help) => {
                if help.on_key(&key, &super::view::help_content(self), self.screen) {
                    self.popups.push(Popup::Help(help));
                }
            }
            Popup::Travel(travel) => self.on_travel_answer(travel, Confirm::answer(&key), actions),
            Popup::Servers(mut choice) => match choice.on_key(&key) {
                Handled::Intent(answer) => self.on_server_answer(choice, answer, actions),
                Handled::Done | Handled::NotMine => self.popups.push(Popup::Servers(choice)),
            },
            Popup::Pager(pager) => self.on_pager_key(pager, key, actions),
            Popup::Pictures(view) => self.on_pictures_key(view, key, actions),
            Popup::Confirm(asked) => self.on_confirm_answer(asked, Confirm::answer(&key), actions),
            Popup::Palette(mut palette) => match palette.on_key(key) {
                Handled::Intent(PaletteIntent::Run(act)) => self.on_palette_act(act, actions),
                Handled::Intent(PaletteIntent::Close) => {}
                Handled::Done | Handled::NotMine => self.popups.push(Popup::Palette(palette)),
            },
            Popup::Inspector(inspector) => self.on_inspector_key(inspector, key, actions),
            Popup::Lineage(mut view) => match view.on_key(key) {
                Handled::Intent(LineageIntent::Open(tape)) => self.open_branch(tape, actions),
                Handled::Intent(LineageIntent::Close) => {}
                Handled::Done | Handled::NotMine => self.popups.push(Popup::Lineage(view)),
            },
            Popup::Editor(mut editor) => match editor.on_key(key) {
                Handled::Intent(EditorIntent::Send) => self.submit_editor(*editor, actions),
                Handled::Intent(EditorIntent::Discard) => {
                    self.say(NoticeLevel::Info, "edit discarded");
                }
                Handled::Intent(
                    EditorIntent::Complete | EditorIntent::SelectAll | EditorIntent::Clear,
                ) => self.popups.push(Popup::Editor(editor)),
                Handled::Done | Handled::NotMine => self.popups.push(Popup::Editor(editor)),
            },
        }
    }

    /// Keys of the focused pane. Returns whether the pane took the key.
    pub(super) fn on_pane_key(&mut self, key: KeyEvent, actions: &mut Vec<Action>) -> bool {
        let pane = self.focus;
        let selected = self.panes.graph.selected().map(str::to_string);
        let seen = self.seen(selected.as_deref(), pane);
        let ctx = view::ctx_of(&self.session, &self.theme, seen);
        match self.panes.get_mut(pane).on_key(key, &ctx) {
            Handled::NotMine => false,
            Handled::Done => true,
            Handled::Intent(intent) => self.on_intent(intent, actions),
        }
    }

    /// What the person meant in a pane, acted on. Returns whether it was
    /// (a demo that is not there is not).
    pub(super) fn on_intent(&mut self, intent: Intent, actions: &mut Vec<Action>) -> bool {
        match intent {
            Intent::Say(level, text) => self.say(level, text),
            Intent::Focus(pane) => self.focus = pane,
            Intent::Selected { changed } => {
                for &pane in Focus::ALL {
                    self.panes.get_mut(pane).on_select(changed);
                }
            }
            Intent::Follow => self.panes.graph.unpin(self.session.timeline.active()),
            Intent::Demo(i) => {
                let Some(demo) = self.session.info.demos.get(i).filter(|_| self.welcome()) else {
                    return false;
                };
                let name = demo.name.clone();
                let step_mode = self.step_armed();
                let request = StartRequest::Demo { name, step_mode };
                self.replace(Replacing::Start(request), actions);
            }
            Intent::SubmitTask => self.submit_task(actions),
            Intent::Attach => self.open_editor(EditTarget::Attach, String::new()),
            Intent::DescribeInputs => self.describe_inputs(),
            Intent::OpenLog => self.open_log(actions),
            Intent::Session(crate::panes::sessions::SessionIntent::Lineage(tape)) => {
                actions.push(Action::ReadLineage(tape));
            }
            Intent::Session(intent) => match Replacing::for_session(intent) {
                Ok(what) => self.replace(what, actions),
                Err(dir) => self.ask(Confirm::DeleteSession, OnYes::Delete(dir)),
            },
        }
        self.dirty = true;
        true
    }

    pub(super) fn on_global(&mut self, act: GlobalAct, actions: &mut Vec<Action>) {
        match act {
            GlobalAct::Quit => self.request_quit(actions),
            GlobalAct::Help => self.popups.push(Popup::Help(Default::default())),
            GlobalAct::Palette => {
                let palette = self.new_palette();
                self.popups.push(Popup::Palette(Box::new(palette)));
            }
            GlobalAct::NextPane => self.cycle_focus(true),
            GlobalAct::PrevPane => self.cycle_focus(false),
            GlobalAct::Zoom => self.zoom = !self.zoom,
            GlobalAct::Unzoom => self.zoom = false,
            GlobalAct::WriteTask => self.focus = Focus::Task,
            GlobalAct::Tape(m) => self.on_tape_move(m),
            GlobalAct::Replay(a) => {
                if let Mode::Replay(clock) = &mut self.session.mode {
                    match a {
                        ReplayAct::PlayPause => clock.toggle(
                            &mut self.session.timeline,
                            self.session.info.loading.is_some(),
                        ),
                        ReplayAct::Faster => clock.faster(),
                        ReplayAct::Slower => clock.slower(),
                    }
                    self.panes.graph.follow(self.session.timeline.active());
                }
            }
            GlobalAct::Steer(s) => self.on_steer(s, actions),
            GlobalAct::Copy => self.copy(actions),
            GlobalAct::Travel(t) => self.on_travel(t),
            GlobalAct::Inspect => self.open_inspector(),
            GlobalAct::Pictures => self.open_pictures(actions),
            GlobalAct::Lineage => self.ask_lineage(actions),
        }
    }

    fn on_tape_move(&mut self, m: TapeMove) {
        if let Mode::Replay(clock) = &mut self.session.mode {
            clock.pause();
        }
        let t = &mut self.session.timeline;
        let jump = match m {
            TapeMove::Back => {
                t.step(false);
                Jump::Moved
            }
            TapeMove::Forward => {
                t.step(true);
                Jump::Moved
            }
            TapeMove::PrevIteration => t.jump_iteration(false),
            TapeMove::NextIteration => t.jump_iteration(true),
            TapeMove::FirstFailure => t.jump_first_failure(),
            TapeMove::Start => {
                t.set_cursor(0);
                Jump::Moved
            }
            TapeMove::End => {
                t.set_cursor(t.records().len());
                Jump::Moved
            }
        };
        self.panes.graph.follow(self.session.timeline.active());
        if jump == Jump::NoneThere {
            let why = match m {
                TapeMove::PrevIteration => "no earlier iteration",
                TapeMove::NextIteration => "no later iteration",
                _ => "no run failed in this session",
            };
            self.say(NoticeLevel::Info, why);
        }
    }

    fn request_quit(&mut self, actions: &mut Vec<Action>) {
        // A session opened from the welcome's list: back to the list.
        if !self.session_running()
            && let Some(list) = self.listed_from.take()
        {
            let (screen, keys) = (self.screen, self.keys_handled);
            *self = *list;
            self.screen = screen;
            self.keys_handled = keys;
            self.dirty = true;
            actions.push(Action::ListSessions);
            return;
        }
        if self.session_running() && self.confirm().is_none() {
            // Over an open editor, which stays (its draft is not lost on a no).
            self.ask(Confirm::Quit, OnYes::CancelAndQuit);
            return;
        }
        if self.has_draft() && self.confirm().is_none() {
            return self.replace(Replacing::Quit, actions);
        }
        if self.session_running() {
            actions.push(Action::Steer(Command::Cancel));
        }
        self.quit = true;
        actions.push(Action::Quit);
    }

    pub(super) fn submit_task(&mut self, actions: &mut Vec<Action>) {
        if let Some(path) = self.panes.task.pending().first() {
            let shown = crate::sanitize::sanitize(&path.display().to_string());
            self.say(
                NoticeLevel::Warning,
                format!("{shown} is still being described: start once it is attached (a moment)"),
            );
            return;
        }
        let task = self.panes.task.text().trim().to_string();
        if task.is_empty() {
            self.say(
                NoticeLevel::Warning,
                "write a task first (or pick a demo in the Workflow pane)",
            );
            return;
        }
        if let Some(demo) = &self.session.info.demo_model
            && demo.task.trim() != task
            && self.session.info.servers.len() > 1
        {
            // Several servers answer here: the task waits for the choice.
            self.ask_server(true);
            return;
        }
        if let Some(demo) = &self.session.info.demo_model
            && demo.task.trim() != task
        {
            // The demo model's authored replies answer its demo, not this task.
            let text = demo.refusal.clone();
            self.popups.push(Popup::Message(Message {
                title: "No model for your task".into(),
                text,
            }));
            return;
        }
        let request = StartRequest::Task {
            task,
            inputs: self.panes.task.attached().to_vec(),
            step_mode: self.step_armed(),
            plan: None,
            demo: None,
        };
        self.start(request, actions);
    }

    /// The selected node's code as the cursor has it, else the session
    /// folder, to the clipboard (the event loop writes the OSC 52).
    fn copy(&mut self, actions: &mut Vec<Action>) {
        let state = self.session.timeline.state();
        let code = self
            .panes
            .graph
            .selected()
            .and_then(|n| Some((n, state.nodes.get(n)?.versions.last()?)));
        let (text, said) = match (code, &self.session.info.session_dir) {
            (Some((node, v)), _) => (
                v.code.clone(),
                format!(
                    "copied {node}'s code (iteration {}) to the clipboard",
                    v.iteration
                ),
            ),
            (None, Some(dir)) => (
                dir.display().to_string(),
                format!(
                    "copied the session folder {} to the clipboard",
                    dir.display()
                ),
            ),
            (None, None) => {
                self.say(
                    NoticeLevel::Warning,
                    "nothing to copy: select a node with code first",
                );
                return;
            }
        };
        actions.push(Action::Copy(text));
        self.say(NoticeLevel::Info, said);
    }

    pub(super) fn start(&mut self, request: StartRequest, actions: &mut Vec<Action>) {
        if let Mode::Live(live) = &mut self.session.mode {
            live.started = true;
            live.ended = None;
        }
        self.focus = Focus::Graph;
        self.say(NoticeLevel::Info, "starting the session…");
        self.session_took_choices();
        actions.push(Action::Start(request));
    }

    pub(super) fn open_editor(&mut self, target: EditTarget, text: String) {
        self.popups.push(Popup::Editor(Box::new(EditorPopup::new(
            target,
            &text,
            &self.theme,
        ))));
    }

    fn submit_editor(&mut self, editor: EditorPopup, actions: &mut Vec<Action>) {
        let (target, text) = editor.into_parts();
        self.send_edit(target, text, actions);
    }

    /// Turn an edited text into its command (or, for a path, an attachment).
    pub(super) fn send_edit(
        &mut self,
        target: EditTarget,
        text: String,
        actions: &mut Vec<Action>,
    ) {
        let command = match target {
            EditTarget::Code { node } => Command::EditCode {
                node,
                code: ensure_newline(text),
            },
            EditTarget::Tests { node } => Command::EditTests {
                node,
                code: ensure_newline(text),
            },
            EditTarget::Hint { node } => {
                if text.trim().is_empty() {
                    self.say(NoticeLevel::Warning, "an empty hint was not sent");
                    return;
                }
                Command::Hint {
                    node,
                    text: text.trim().to_string(),
                }
            }
            EditTarget::Spec { node } => match parse_spec(&node, &text) {
                Ok(spec) => Command::EditSpec { node, spec },
                Err(message) => {
                    // Keep the text: the person fixes the line named.
                    self.say(NoticeLevel::Error, message);
                    self.open_editor(EditTarget::Spec { node }, text);
                    return;
                }
            },
            // Sent to the model as edited: the edit, then the go-ahead.
            EditTarget::Prompt { tag } => {
                if let Some(command) = self.prompt_command(tag, text) {
                    self.say(NoticeLevel::Info, "sent: the edited prompt, to the model");
                    actions.push(Action::Steer(command));
                    actions.push(Action::Steer(Command::Approve));
                }
                return;
            }
            EditTarget::Task => {
                if text.trim().is_empty() {
                    self.say(NoticeLevel::Warning, "an empty task was not sent");
                    return;
                }
                Command::EditTask {
                    task: text.trim().to_string(),
                }
            }
            EditTarget::Attach => {
                self.attach(text, actions);
                return;
            }
            EditTarget::Plan => return self.send_plan(text, actions),
        };
        self.say(
            NoticeLevel::Info,
            format!("sent: {}", words::command(&command)),
        );
        actions.push(Action::Steer(command));
    }

    pub(super) fn on_steer(&mut self, act: SteerAct, actions: &mut Vec<Action>) {
        let started = matches!(&self.session.mode, Mode::Live(l) if l.started);
        match act {
            SteerAct::NewSession => return self.ask_new_session(started, actions),
            SteerAct::WritePlan => {
                if started {
                    self.write_plan();
                }
                return;
            }
            // On the welcome screen the demos' keys are the graph pane's.
            SteerAct::Demo(i) => {
                if started {
                    self.leave_for_demo(i, actions);
                }
                return;
            }
            _ => {}
        }
        if act == SteerAct::StepMode && self.arm_step_mode() {
            return;
        }
        if !self.engine_alive() {
            self.say(NoticeLevel::Warning, "no session is running");
            return;
        }
        let paused = self.engine_paused().is_some();
        match act {
            SteerAct::StepMode => {
                let on = !self.state().step_mode;
                actions.push(Action::Steer(Command::SetStepMode { on }));
                self.say(
                    NoticeLevel::Info,
                    if on {
                        "step mode on: the engine pauses before each model call and run"
                    } else {
                        "step mode off"
                    },
                );
            }
            SteerAct::Approve if paused && !self.at_end() => {
                self.steer_from_the_past(Command::Approve, actions)
            }
            SteerAct::Skip if paused => self.skip(actions),
            SteerAct::Approve if paused => actions.push(Action::Steer(Command::Approve)),
            SteerAct::Approve => self.say(
                NoticeLevel::Warning,
                "nothing to approve: the engine is not paused (s turns step mode on)",
            ),
            SteerAct::Skip => self.say(
                NoticeLevel::Warning,
                "nothing to skip: the engine is not paused",
            ),
            // Before a model call, e edits its prompt (in one key), but in
            // the Code pane it edits what the tab shows (the tests on the
            // tests tab), as it does at any other time.
            SteerAct::EditCode if self.paused_before_a_call() && self.focus != Focus::Code => {
                self.edit_prompt(actions)
            }
            // Paused at a test that may be wrong, e edits that node's tests.
            SteerAct::EditCode if self.focus != Focus::Code && self.doubted_node().is_some() => {
                if let Some(node) = self.doubted_node() {
                    let tests = self
                        .state()
                        .nodes
                        .get(&node)
                        .and_then(|n| n.tests.clone())
                        .unwrap_or_default();
                    self.open_editor(EditTarget::Tests { node }, tests);
                }
            }
            // In the task pane, e edits the task.
            SteerAct::EditCode if self.focus == Focus::Task => {
                let task = self.state().task.clone();
                self.open_editor(EditTarget::Task, task);
            }
            SteerAct::EditCode
            | SteerAct::OpenEditor
            | SteerAct::EditSpec
            | SteerAct::Hint
            | SteerAct::Rerun => self.on_node_act(act, actions),
            SteerAct::Cancel => self.ask(Confirm::CancelSession, OnYes::Cancel),
            SteerAct::NewSession | SteerAct::WritePlan | SteerAct::Demo(_) => {}
        }
    }

    /// `n`: a new session, once this one is not running (the welcome
    /// screen's own keys start one before).
    fn ask_new_session(&mut self, started: bool, actions: &mut Vec<Action>) {
        if !started {
            return;
        }
        if self.session_running() {
            self.say(
                NoticeLevel::Warning,
                "a session is running: c cancels it first",
            );
        } else {
            self.replace(Replacing::NewSession, actions);
        }
    }

    /// `s` before a live session starts: step mode armed for it, or no
    /// longer. False when there is an engine or a started session to ask.
    fn arm_step_mode(&mut self) -> bool {
        if self.engine_alive() {
            return false;
        }
        let Mode::Live(live) = &mut self.session.mode else {
            return false;
        };
        if live.started {
            return false;
        }
        live.step_armed = !live.step_armed;
        let on = live.step_armed;
        self.say(
            NoticeLevel::Info,
            if on {
                "step mode on: the session will pause before each model call and run"
            } else {
                "step mode off"
            },
        );
        true
    }

    /// What acts on the selected node: its code or tests edited (here or
    /// in `$EDITOR`), its spec edited, a hint, a re-run.
    fn on_node_act(&mut self, act: SteerAct, actions: &mut Vec<Action>) {
        let Some(node) = self.selected().map(str::to_string) else {
            self.say(
                NoticeLevel::Warning,
                "select a node first (Workflow pane, ↑/↓)",
            );
            return;
        };
        match act {
            SteerAct::EditCode => {
                let (target, text) = self.code_target(node);
                self.open_editor(target, text);
            }
            SteerAct::OpenEditor => {
                let (target, text) = self.code_target(node);
                actions.push(Action::OpenEditor(ExternalEdit { target, text }));
            }
            SteerAct::EditSpec => {
                let text = self
                    .state()
                    .nodes
                    .get(&node)
                    .map(|n| spec_text(&n.spec))
                    .unwrap_or_default();
                self.open_editor(EditTarget::Spec { node }, text);
            }
            SteerAct::Hint => self.open_editor(EditTarget::Hint { node }, String::new()),
            SteerAct::Rerun => {
                self.say(NoticeLevel::Info, format!("re-running {node}"));
                actions.push(Action::Steer(Command::RerunNode { node }));
            }
            _ => {}
        }
    }

    /// A click gives a pane the focus, then the pane the click; the
    /// wheel scrolls the pane under it.
    pub(super) fn on_mouse(&mut self, m: MouseEvent) {
        let areas = view::layout(self, self.screen);
        let pos = Position::new(m.column, m.row);
        let Some(pane) = areas.pane_at(pos) else {
            return;
        };
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                self.focus = pane;
                self.dirty = true;
                let selected = self.panes.graph.selected().map(str::to_string);
                let seen = self.seen(selected.as_deref(), pane);
                let ctx = view::ctx_of(&self.session, &self.theme, seen);
                let clicked = self.panes.get_mut(pane).on_click(&ctx, areas.of(pane), pos);
                if let Handled::Intent(intent) = clicked {
                    self.on_intent(intent, &mut Vec::new());
                }
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = matches!(m.kind, MouseEventKind::ScrollUp);
                if self.panes.get_mut(pane).on_wheel(up) {
                    self.dirty = true;
                }
            }
            _ => {}
        }
    }
}

fn ensure_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
