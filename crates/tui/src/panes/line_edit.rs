//! The readline meanings of the editing keys, everywhere a line is typed:
//! Ctrl-U deletes to the start of the line, Ctrl-W the word before the
//! cursor, Ctrl-H like Backspace; Ctrl-Z undoes in a text area (where the
//! text area's own Ctrl-U would undo instead). In a text area, Ctrl-A
//! selects all the text (what is typed, pasted or deleted next replaces
//! it; Home goes to the line's start) and Ctrl-L clears it (Ctrl-Z brings
//! it back). One place, so the palette, the searches, the task editor and
//! the editor popup agree.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::TextArea;

fn ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

/// Edit a one-line input (typed at its end). Returns whether the key was
/// an editing key; control keys that are not are left alone.
pub(crate) fn edit_line(line: &mut String, key: &KeyEvent) -> bool {
    if key.code == KeyCode::Backspace || ctrl(key, 'h') {
        line.pop();
    } else if ctrl(key, 'u') {
        line.clear();
    } else if ctrl(key, 'w') {
        let kept = line.trim_end().len();
        let start = line[..kept].rfind(char::is_whitespace).map_or(0, |i| i + 1);
        line.truncate(start);
    } else if let KeyCode::Char(c) = key.code
        && !key.modifiers.contains(KeyModifiers::CONTROL)
        && !key.modifiers.contains(KeyModifiers::ALT)
    {
        line.push(c);
    } else {
        return false;
    }
    true
}

/// A key into a text area, with the readline meanings first.
pub(crate) fn textarea_key(area: &mut TextArea<'static>, key: KeyEvent) {
    if ctrl(&key, 'u') {
        area.delete_line_by_head();
    } else if ctrl(&key, 'w') {
        area.delete_word();
    } else if ctrl(&key, 'z') {
        area.undo();
    } else if ctrl(&key, 'a') {
        area.select_all();
    } else if ctrl(&key, 'l') {
        clear(area);
    } else {
        area.input(key);
    }
}

/// All the text of `area` deleted, as one edit Ctrl-Z undoes.
pub(crate) fn clear(area: &mut TextArea<'static>) {
    area.select_all();
    area.delete_char();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn ctrl_u_and_ctrl_w_delete_in_a_line_and_in_a_text_area() {
        let mut line = "step mode on".to_string();
        assert!(edit_line(
            &mut line,
            &key(KeyCode::Char('w'), KeyModifiers::CONTROL)
        ));
        assert_eq!(line, "step mode ");
        edit_line(&mut line, &key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(line, "step ");
        edit_line(&mut line, &key(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(line, "");
        assert!(!edit_line(
            &mut line,
            &key(KeyCode::Char('p'), KeyModifiers::CONTROL)
        ));
        assert_eq!(line, "", "no letter typed for a control key");

        let mut area = TextArea::from(["first line", "count the words"]);
        area.move_cursor(ratatui_textarea::CursorMove::Bottom);
        area.move_cursor(ratatui_textarea::CursorMove::End);
        textarea_key(&mut area, key(KeyCode::Char('w'), KeyModifiers::CONTROL));
        assert_eq!(area.lines()[1], "count the ");
        textarea_key(&mut area, key(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(area.lines(), ["first line", ""]);
        textarea_key(&mut area, key(KeyCode::Char('z'), KeyModifiers::CONTROL));
        assert_eq!(area.lines()[1], "count the ", "Ctrl-Z undoes");
    }

    /// Forty wrong lines replaced in two keys and a paste, not thousands
    /// of Backspaces (issue 42).
    #[test]
    fn ctrl_a_selects_all_the_text_what_is_typed_replaces_it_and_ctrl_l_clears_it() {
        let wrong: Vec<String> = (0..40).map(|i| format!("assert f({i}) == {i}")).collect();
        let mut area = TextArea::new(wrong.clone());
        textarea_key(&mut area, key(KeyCode::Char('a'), KeyModifiers::CONTROL));
        textarea_key(&mut area, key(KeyCode::Char('x'), KeyModifiers::NONE));
        assert_eq!(area.lines(), ["x"], "typing replaced the selection");
        area.select_all();
        area.insert_str("def test_f():\n    assert f(1) == 2");
        assert_eq!(area.lines(), ["def test_f():", "    assert f(1) == 2"]);

        let mut area = TextArea::new(wrong.clone());
        textarea_key(&mut area, key(KeyCode::Char('l'), KeyModifiers::CONTROL));
        assert_eq!(area.lines(), [""], "Ctrl-L cleared it");
        textarea_key(&mut area, key(KeyCode::Char('z'), KeyModifiers::CONTROL));
        assert_eq!(area.lines(), wrong.as_slice(), "Ctrl-Z brings it back");
    }
}
