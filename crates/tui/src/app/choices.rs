//! The app's side of the command palette: an action of the keys' tables,
//! the theme, the choices for the next session (model profile, workers, the
//! cache) and the export of the open session.

use super::{Action, App, Mode, Popup, view};
use crate::keymap;
use crate::panes::palette::{Offers, Palette, PaletteAct};
use crate::panes::servers::{ServerAnswer, ServerChoice};
use codeloop_protocol::present::{count, plural};
use codeloop_session::{NoticeLevel, State};

/// What the next session starts with, as chosen in the palette (None: the
/// config's). Each change goes to the event loop's starter
/// (`Action::Configure`), which, like the app, forgets the cache bypass once
/// a session started with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionChoices {
    /// A model server found on this machine (when several answer).
    pub server: Option<FoundServer>,
    /// A `[models.NAME]` profile of the config.
    pub profile: Option<String>,
    /// Parallel nodes.
    pub workers: Option<usize>,
    /// Don't use the cache of solved tasks (for the next task only).
    pub no_cache: bool,
}

/// A model server found running on this machine, as the workbench offers
/// it when several answer and none is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundServer {
    /// Its base URL (`http://localhost:8080/v1`).
    pub base_url: String,
    /// What it is, in words ("llama.cpp's llama-server").
    pub server: String,
    /// The model a session would use there.
    pub model: String,
}

impl SessionChoices {
    /// "profile local · 4 workers · no cache", for the status bar (a server
    /// chosen is the welcome's model label already).
    pub(crate) fn words(&self) -> Option<String> {
        let mut words = Vec::new();
        if let Some(p) = &self.profile {
            words.push(format!("profile {p}"));
        }
        if let Some(n) = self.workers {
            words.push(count(n, "worker"));
        }
        if self.no_cache {
            words.push("no cache".to_string());
        }
        (!words.is_empty()).then(|| words.join(" · "))
    }
}

impl App {
    /// What the palette offers beside the keys.
    pub(super) fn palette_offers(&self) -> Offers {
        Offers {
            servers: self.session.info.servers.len() > 1,
            profiles: self.session.info.profiles.clone(),
            no_cache: self.choices.no_cache,
            export: !self.welcome() && !self.session.timeline.records().is_empty(),
            demos: self
                .session
                .info
                .demos
                .iter()
                .map(|d| d.name.clone())
                .collect(),
        }
    }

    /// The palette: the focused pane's actions, the workbench's of this
    /// mode, the theme, the choices for the next session, the export.
    pub(super) fn new_palette(&self) -> Palette {
        let all = Palette::new(&keymap::global(self.mode_kind()));
        let pane = self.panes.get(self.focus);
        let all = all.with_pane(pane.title(), &view::pane_rows(self));
        all.with_offers(self.palette_offers())
    }

    /// The choices the next session starts with.
    pub fn session_choices(&self) -> &SessionChoices {
        &self.choices
    }

    /// A session starts: the cache bypass was for it alone.
    pub(super) fn session_took_choices(&mut self) {
        self.choices.no_cache = false;
    }

    pub(super) fn on_palette_act(&mut self, act: PaletteAct, actions: &mut Vec<Action>) {
        let live = matches!(self.session.mode, Mode::Live(_));
        match act {
            PaletteAct::Key(k) => {
                // The act itself, not the key: a pane's own key must not shadow it.
                if let Some(act) = keymap::lookup_global(self.mode_kind(), &k.event()) {
                    self.on_global(act, actions);
                }
            }
            PaletteAct::PaneKey(k) => {
                self.on_pane_key(k.event(), actions);
            }
            PaletteAct::Theme(name) => self.set_theme(name),
            // The palette opens the second list itself.
            PaletteAct::Values(_) => {}
            PaletteAct::Profile(_)
            | PaletteAct::Workers(_)
            | PaletteAct::Cache(_)
            | PaletteAct::Servers
                if !live =>
            {
                self.say(
                    NoticeLevel::Warning,
                    "this is a recorded session: choices for a next session are made in the workbench (`codeloop`)",
                );
            }
            PaletteAct::Profile(name) => {
                self.say(
                    NoticeLevel::Info,
                    format!("the next session uses the model profile {name}"),
                );
                self.choices.profile = Some(name);
                // A profile names its own server.
                self.choices.server = None;
                actions.push(Action::Configure(self.choices.clone()));
            }
            PaletteAct::Servers => self.ask_server(false),
            PaletteAct::Workers(n) => {
                let running = if self.session_running() {
                    format!(
                        " (the running session keeps its {})",
                        self.state().config.workers
                    )
                } else {
                    String::new()
                };
                self.say(
                    NoticeLevel::Info,
                    format!(
                        "the next session runs {n} node{} at a time{running}",
                        plural(n)
                    ),
                );
                self.choices.workers = Some(n);
                actions.push(Action::Configure(self.choices.clone()));
            }
            PaletteAct::Cache(on) => {
                self.choices.no_cache = !on;
                actions.push(Action::Configure(self.choices.clone()));
                self.say(
                    NoticeLevel::Info,
                    if on {
                        "the next task uses the cache of solved tasks again"
                    } else {
                        "the next task does not use the cache: the model is asked afresh"
                    },
                );
            }
            PaletteAct::Export(format) => {
                let state = if self.at_end() {
                    self.state().clone()
                } else {
                    State::from_records(self.session.timeline.records())
                };
                actions.push(Action::Export {
                    format,
                    state: Box::new(state),
                    session_dir: self.session.info.session_dir.clone(),
                    source: self.session.info.source.clone(),
                });
            }
        }
    }
}

impl App {
    /// Ask which of the model servers found on this machine the next
    /// session uses (`then_submit`: the task sent waits for the answer).
    pub(super) fn ask_server(&mut self, then_submit: bool) {
        let mut choice = ServerChoice::new(
            self.session.info.servers.clone(),
            self.choices.server.as_ref(),
        );
        choice.then_submit = then_submit;
        self.popups.push(Popup::Servers(choice));
    }

    /// The answer to `ask_server`.
    pub(super) fn on_server_answer(
        &mut self,
        choice: ServerChoice,
        answer: ServerAnswer,
        actions: &mut Vec<Action>,
    ) {
        let ServerAnswer::Use(server) = answer else {
            self.say(
                NoticeLevel::Info,
                "no model server chosen yet: the demos play; `:` model server… chooses one",
            );
            return;
        };
        let found = self.session.info.servers.len();
        self.session.info.model_label = format!(
            "{} at {} ({}, chosen of {found} found running on this machine)",
            server.model, server.base_url, server.server
        );
        // The demo model stood in until now: a task of one's own goes to the server.
        self.session.info.demo_model = None;
        self.say(
            NoticeLevel::Info,
            format!(
                "the next session uses {} at {} ({})",
                server.model, server.base_url, server.server
            ),
        );
        self.choices.server = Some(server);
        self.choices.profile = None;
        actions.push(Action::Configure(self.choices.clone()));
        if choice.then_submit {
            self.submit_task(actions);
        }
    }
}
