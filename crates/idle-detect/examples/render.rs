//! Renders a saved screen through the screen model and prints its lines and verdict.
//!
//! `cargo run -p hyoka-idle-detect --example render -- FILE [PROFILE]`

use hyoka_idle_detect::{Profile, Screen, classify_screen, render_explain};

#[expect(clippy::print_stdout, reason = "an example prints its result")]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: render FILE [PROFILE]")?;
    let profile = Profile::builtin(&args.next().unwrap_or_else(|| "claude-code".to_owned()))?;
    let bytes = std::fs::read(path)?;
    let screen = Screen::from_bytes(&bytes);
    for (i, line) in screen.lines().iter().enumerate() {
        println!("{i:>3}|{line}");
    }
    print!("{}", render_explain(&classify_screen(&profile, &bytes)));
    Ok(())
}
