//! The pictures' round trip: `I` opens the view of the pictures the
//! session's programs drew (as the state at the cursor has them), the event
//! loop decodes the shown file off the UI thread (`Action::ReadPicture`),
//! and the pixels come back as `Msg::PictureRead`.

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::KeyEvent;

use super::{Action, App, Popup};
use crate::panes::Handled;
use crate::panes::pictures::{PictureView, PicturesIntent, entries};
use crate::picture::Pixels;
use codeloop_session::NoticeLevel;

impl App {
    /// Open the pictures, or say why there are none.
    pub(super) fn open_pictures(&mut self, actions: &mut Vec<Action>) {
        let state = self.session.timeline.state();
        if state.pictures.is_empty() {
            self.say(
                NoticeLevel::Info,
                "no pictures yet: a program that writes a PNG, JPEG, GIF or SVG file into its working directory has it kept and shown here",
            );
            return;
        }
        let Some(dir) = self.session.info.session_dir.clone() else {
            let names: Vec<String> = state
                .pictures
                .iter()
                .map(|p| p.picture.path.clone())
                .collect();
            self.say(
                NoticeLevel::Info,
                format!(
                    "pictures: {} (this view has no session folder to read them from)",
                    names.join(", ")
                ),
            );
            return;
        };
        let view = PictureView::new(entries(state, &dir))
            .with_graphics(self.session.info.graphics.clone());
        if let Some(file) = view.selected_file() {
            actions.push(Action::ReadPicture(file.to_path_buf()));
        }
        self.popups.push(Popup::Pictures(Box::new(view)));
    }

    pub(super) fn on_pictures_key(
        &mut self,
        mut view: Box<PictureView>,
        key: KeyEvent,
        actions: &mut Vec<Action>,
    ) {
        match view.on_key(key) {
            Handled::Intent(PicturesIntent::Close) => return,
            Handled::Intent(PicturesIntent::Load(file)) => actions.push(Action::ReadPicture(file)),
            Handled::Done | Handled::NotMine => {}
        }
        self.popups.push(Popup::Pictures(view));
    }

    /// A picture was decoded: the view showing it takes it.
    pub(super) fn on_picture_read(&mut self, path: PathBuf, result: Result<Arc<Pixels>, String>) {
        for popup in self.popups.iter_mut() {
            if let Popup::Pictures(view) = popup {
                view.loaded(&path, result.clone());
            }
        }
        self.dirty = true;
    }

    /// How pictures are drawn in this terminal (`graphics::detect`, made
    /// once before the first frame).
    pub fn set_graphics(&mut self, graphics: crate::graphics::Graphics) {
        self.session.info.graphics = graphics;
    }

    /// Before a frame: the open pictures view encodes its picture for the
    /// screen's size, where it draws with a protocol.
    pub(super) fn prepare_pictures(&mut self) {
        let background = match self.theme.background.bg {
            Some(ratatui::style::Color::Rgb(r, g, b)) => [r, g, b],
            _ => [0, 0, 0],
        };
        let screen = self.screen;
        for popup in self.popups.iter_mut() {
            if let Popup::Pictures(view) = popup {
                view.prepare(screen, background);
            }
        }
    }

    /// The open pictures view, if any (tests).
    pub fn pictures(&self) -> Option<&PictureView> {
        self.popups.iter().rev().find_map(|p| match p {
            Popup::Pictures(v) => Some(v.as_ref()),
            Popup::Help(_)
            | Popup::Confirm(_)
            | Popup::Editor(_)
            | Popup::Palette(_)
            | Popup::Message(_)
            | Popup::Travel(_)
            | Popup::Servers(_)
            | Popup::Pager(_)
            | Popup::Inspector(_)
            | Popup::Lineage(_) => None,
        })
    }
}
