//! The registry of the popups: one line a popup. `popups!` makes
//! `Popup`, the stack's element (each variant carries what the popup acts
//! on), and `Popup::view`, the popup as a `PopupView`: the frame draws the
//! stack through it, and the footer asks the top one for its keys. A
//! popup's keys are its arm in `keys.rs`, `on_popup_key`.

use crate::panes::popup::PopupView;

macro_rules! popups {
    ($($(#[$doc:meta])* $name:ident($ty:ty),)+) => {
        /// A popup over the panes: the top one takes every key while open.
        pub(crate) enum Popup {
            $($(#[$doc])* $name($ty),)+
        }

        impl Popup {
            /// What it shows.
            pub(crate) fn view(&self) -> &dyn PopupView {
                match self {
                    $(Popup::$name(p) => p,)+
                }
            }
        }
    };
}

popups! {
    Help(crate::panes::help::Help),
    /// A yes/no question, with what a yes acts on.
    Confirm(crate::panes::confirm::Asking<super::guard::OnYes>),
    Editor(Box<crate::panes::editor::EditorPopup>),
    Palette(Box<crate::panes::palette::Palette>),
    Message(crate::panes::message::Message),
    /// Which model server, of several found on this machine (`choices.rs`).
    Servers(crate::panes::servers::ServerChoice),
    /// Fork or rewind, asked first (`timetravel.rs`).
    Travel(crate::panes::travel::Travel),
    Pager(Box<crate::panes::pager::Pager>),
    /// The pictures the programs drew (`pictures.rs`).
    Pictures(Box<crate::panes::pictures::PictureView>),
    /// The model-call inspector.
    Inspector(Box<crate::panes::inspector::Inspector>),
    /// A session's lineage, to move between its branches (`lineage.rs`).
    Lineage(Box<crate::panes::lineage::LineageView>),
}
