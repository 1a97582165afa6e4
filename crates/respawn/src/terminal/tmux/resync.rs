//! Keeping the model of a tmux pane the size and content of the pane: the pane's size read
//! from `%layout-change` notifications, and the pane's own screen (`capture-pane`) asked for
//! in band, through the control client, so that its reply is ordered exactly with the
//! `%output` around it.
//!
//! A tmux window takes the size of the client that used it last (`window-size latest`):
//! when a person attaches from a terminal of another size, the agent redraws at that size,
//! and when they leave, at ours again (the control client declares its size with
//! `refresh-client -C`, or the window would keep the person's size). Each change is a
//! `%layout-change` line in the control stream, between the output drawn before it and the
//! output drawn after it; the terminal reports it there, and then replaces the model's
//! screen with the pane's own, so that what tmux itself rewrapped or cut on the resize is
//! what the model shows too.

use super::Size;

/// The command list, sent through the control client, whose reply redraws the pane: its
/// visible rows with their attributes, then the cursor's position on a line of its own.
pub(super) fn resync_command(pane: &str) -> String {
    format!(
        "capture-pane -p -e -t {pane} ; display-message -p -t {pane} 'hyoka-cursor #{{cursor_x}} #{{cursor_y}} #{{pane_width}} #{{pane_height}}'\n"
    )
}

/// The size of pane `pane` (`%3` is pane 3) in a `%layout-change` notification's layout,
/// `checksum,WxH,X,Y,ID` for one pane or `checksum,WxH,X,Y{cell,cell}` with `[]` for a
/// vertical split, cells nesting the same way.
pub(super) fn pane_size_in_layout(layout: &str, pane: &str) -> Option<Size> {
    let id: u32 = pane.strip_prefix('%')?.parse().ok()?;
    // Skip the checksum.
    let (_, mut rest) = layout.split_once(',')?;
    loop {
        let (cols, after) = number(rest)?;
        let after = after.strip_prefix('x')?;
        let (rows, after) = number(after)?;
        let after = after.strip_prefix(',')?;
        let (_, after) = number(after)?;
        let after = after.strip_prefix(',')?;
        let (_, after) = number(after)?;
        // A leaf ends with `,ID`; a container opens `{` or `[` and its first cell follows.
        if let Some(leaf) = after.strip_prefix(',') {
            let (leaf_id, tail) = number(leaf)?;
            if leaf_id == id {
                return Some(Size {
                    rows: u16::try_from(rows).ok()?,
                    cols: u16::try_from(cols).ok()?,
                });
            }
            rest = tail.trim_start_matches(['}', ']', ',']);
        } else {
            rest = after.strip_prefix(['{', '['])?;
        }
        if rest.is_empty() {
            return None;
        }
    }
}

fn number(text: &str) -> Option<(u32, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    Some((text[..end].parse().ok()?, &text[end..]))
}

/// The pane's size and cursor from the resync reply's last line
/// (`hyoka-cursor X Y W H`).
pub(super) fn parse_cursor(line: &[u8]) -> Option<(u16, u16, Size)> {
    let text = std::str::from_utf8(line).ok()?;
    let mut fields = text.strip_prefix("hyoka-cursor ")?.split(' ');
    let mut next = || fields.next()?.trim().parse::<u16>().ok();
    let (x, y, cols, rows) = (next()?, next()?, next()?, next()?);
    Some((x, y, Size { rows, cols }))
}

/// Terminal output that replaces a screen with the captured `rows` (each with its
/// attributes, as `capture-pane -e` gives them) and puts the cursor at `(x, y)`: every row is
/// drawn at its own position, so nothing scrolls, and attributes are reset between rows.
pub(super) fn redraw(rows: &[Vec<u8>], x: u16, y: u16, size: Size) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.iter().map(Vec::len).sum::<usize>() + 64);
    out.extend_from_slice(b"\x1b[0m\x1b[H\x1b[2J");
    for (i, row) in rows.iter().take(usize::from(size.rows)).enumerate() {
        if row.is_empty() {
            continue;
        }
        out.extend_from_slice(format!("\x1b[{};1H", i + 1).as_bytes());
        out.extend_from_slice(row);
        out.extend_from_slice(b"\x1b[0m");
    }
    out.extend_from_slice(format!("\x1b[{};{}H", y + 1, x + 1).as_bytes());
    out
}

#[cfg(test)]
mod tests;
