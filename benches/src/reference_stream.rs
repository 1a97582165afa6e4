//! A Rust port of `shared/bench/gen-stream.js`: the deterministic Claude-Code-like terminal
//! stream used to compare idle detection with Codeman's figures.
//!
//! The port reproduces the JavaScript byte for byte (mulberry32 with the same seed, the same
//! order of random draws, the same `f64` arithmetic), so its SHA-256 is the one in
//! `shared/bench/README.md` ([`REFERENCE_SHA256`]).

/// The size of the reference stream in bytes (50 MiB).
pub const REFERENCE_BYTES: usize = 50 * 1024 * 1024;
/// The generator's seed (`0xC0DE3A11`).
pub const REFERENCE_SEED: u32 = 3_235_818_001;
/// The SHA-256 of the 50 MiB stream, hex-encoded.
pub const REFERENCE_SHA256: &str =
    "442706a744f7e15915bd32ba38010de12caf19570c22bb9326341208e0b60dcb";

const WORDS: &[&str] = &[
    "the",
    "function",
    "returns",
    "value",
    "file",
    "module",
    "config",
    "update",
    "test",
    "error",
    "handler",
    "session",
    "buffer",
    "output",
    "index",
    "server",
    "client",
    "request",
    "response",
    "data",
    "parse",
    "string",
    "number",
    "array",
    "object",
    "async",
    "await",
    "import",
    "export",
    "const",
    "let",
    "type",
    "interface",
    "class",
    "method",
    "property",
    "render",
    "state",
    "event",
    "stream",
    "chunk",
    "cache",
    "retry",
    "timeout",
    "status",
    "result",
    "options",
    "path",
    "fixed",
    "added",
    "removed",
    "refactor",
    "should",
    "check",
    "ensure",
    "handle",
    "now",
    "next",
    "then",
    "also",
    "with",
    "from",
    "into",
    "over",
    "under",
    "when",
    "while",
    "because",
    "since",
    "until",
    "src/index.ts",
    "src/session.ts",
    "package.json",
    "README.md",
    "tests/unit.test.ts",
    "lib/util.rs",
    "Cargo.toml",
];
const WORKING_WORDS: &[&str] = &[
    "Reading", "Running", "Testing", "Loading", "Checking", "Updating", "Writing", "Starting",
];
const SPINNERS: &[&str] = &[
    "⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", "✻", "✽", "✶", "✳", "✢", "·",
];
const VERBS: &[&str] = &[
    "Thinking",
    "Brewing",
    "Synthesizing",
    "Pondering",
    "Cogitating",
    "Clauding",
    "Noodling",
    "Percolating",
    "Working",
];
const TOOLS: &[&str] = &[
    "Read", "Bash", "Edit", "Write", "Grep", "Glob", "Task", "Explore",
];
const TITLES: &[&str] = &["Claude Code", "Fix failing tests", "Refactor parser"];
const SUMMARIES: &[&str] = &[
    "Read 120 lines",
    "Updated src/session.ts with 3 additions and 1 removal",
    "Found 14 files",
    "Wrote 88 lines to src/new_module.rs",
    "(No content)",
    "Error: command exited with code 1",
    "Done",
];
/// Segment weights, in the generator's order (plain, sgr, inkRedraw, spinner, promptBox,
/// toolCall, oscTitle, completion, tokenStatus, planMenu, codeBlock).
const WEIGHTS: [f64; 11] = [28.0, 16.0, 14.0, 14.0, 6.0, 8.0, 3.0, 0.05, 4.0, 0.02, 6.0];

/// The generator: mulberry32 plus the segment writers.
struct Generator {
    state: u32,
    out: Vec<u8>,
}

impl Generator {
    fn rnd(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x6d2b_79f5);
        let mut t = self.state;
        t = (t ^ (t >> 15)).wrapping_mul(t | 1);
        // `t | 61` in the JavaScript.
        t ^= t.wrapping_add((t ^ (t >> 7)).wrapping_mul(t | 0x3d));
        f64::from(t ^ (t >> 14)) / 4_294_967_296.0
    }

    /// `lo + floor(rnd() * (hi - lo + 1))`.
    fn ri(&mut self, lo: u32, hi: u32) -> u32 {
        let span = f64::from(hi - lo + 1);
        // `rnd()` is in [0, 1), so the product is in [0, span) and fits.
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "in range by construction"
        )]
        let offset = (self.rnd() * span).floor() as u32;
        lo + offset
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        #[expect(clippy::cast_precision_loss, reason = "short lists")]
        let len = items.len() as f64;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "in range by construction"
        )]
        let i = (self.rnd() * len).floor() as usize;
        items[i]
    }

    fn tok(&mut self) -> String {
        if self.rnd() < 0.6 {
            let a = self.ri(1, 199);
            let b = self.ri(0, 9);
            format!("{a}.{b}k")
        } else {
            self.ri(10, 999).to_string()
        }
    }

    fn words(&mut self, n: u32) -> Vec<&'static str> {
        let mut w: Vec<&'static str> = (0..n).map(|_| self.pick(WORDS)).collect();
        if self.rnd() < 0.05 {
            let last = u32::try_from(w.len() - 1).unwrap_or(0);
            let i = self.ri(0, last) as usize;
            w[i] = self.pick(WORKING_WORDS);
        }
        w
    }

    fn push(&mut self, s: &str) {
        self.out.extend_from_slice(s.as_bytes());
    }

    fn segment(&mut self) {
        let mut x = self.rnd() * WEIGHTS.iter().sum::<f64>();
        let mut chosen = 0;
        for (i, w) in WEIGHTS.iter().enumerate() {
            x -= w;
            if x < 0.0 {
                chosen = i;
                break;
            }
        }
        match chosen {
            1 => self.sgr(),
            2 => self.ink_redraw(),
            3 => self.spinner(),
            4 => self.prompt_box(),
            5 => {
                let tool = self.pick(TOOLS);
                let word = self.pick(WORDS);
                let summary = self.pick(SUMMARIES);
                self.push(&format!("⏺ {tool}({word})\r\n  ⎿  {summary}\r\n"));
            }
            6 => {
                let spinner = self.pick(SPINNERS);
                let title = self.pick(TITLES);
                self.push(&format!("\x1b]0;{spinner} {title}\x07"));
            }
            7 => self.completion(),
            8 => {
                if self.rnd() < 0.7 {
                    let t = self.tok();
                    self.push(&format!("  \x1b[2m{t} tokens\x1b[22m\r\n"));
                } else {
                    let p = self.ri(1, 40);
                    self.push(&format!("  \x1b[2mContext left until auto-compact: {p}%\x1b[22m\r\n"));
                }
            }
            9 => self.push(
                "\r\nWould you like to proceed?\r\n\r\n\x1b[36m❯ 1. Yes, and auto-accept edits\x1b[39m\r\n  2. Yes, and manually approve edits\r\n  3. No, keep planning\r\n",
            ),
            10 => self.code_block(),
            _ => {
                let n = self.ri(6, 16);
                let line = self.words(n).join(" ");
                self.push(&line);
                self.push("\r\n");
            }
        }
    }

    fn sgr(&mut self) {
        let n = self.ri(5, 12);
        let words = self.words(n);
        let styled: Vec<String> = words
            .into_iter()
            .map(|w| {
                let r = self.rnd();
                if r < 0.5 {
                    let c = self.ri(16, 231);
                    format!("\x1b[38;5;{c}m{w}\x1b[39m")
                } else if r < 0.7 {
                    format!("\x1b[1m{w}\x1b[22m")
                } else if r < 0.8 {
                    format!("\x1b[2m{w}\x1b[22m")
                } else {
                    w.to_owned()
                }
            })
            .collect();
        self.push(&styled.join(" "));
        self.push("\x1b[0m\r\n");
    }

    fn ink_redraw(&mut self) {
        let mut o = String::from("\x1b[?2026h");
        let k = self.ri(1, 6);
        for _ in 0..k {
            o.push_str("\x1b[2K\x1b[1A");
        }
        o.push_str("\x1b[2K\x1b[G");
        let w = self.ri(20, 100) as usize;
        o.push('╭');
        o.push_str(&"─".repeat(w));
        o.push('╮');
        o.push_str(if self.rnd() < 0.5 {
            "\x1b[?25l"
        } else {
            "\x1b[?25h"
        });
        o.push_str("\x1b[?2026l");
        self.push(&o);
    }

    fn spinner(&mut self) {
        let glyph = self.pick(SPINNERS);
        let verb = self.pick(VERBS);
        let secs = self.ri(1, 600);
        let arrow = if self.rnd() < 0.5 { "↑" } else { "↓" };
        let tok = self.tok();
        self.push(&format!(
            "\r\x1b[2K\x1b[38;5;174m{glyph}\x1b[39m {verb}… \x1b[2m({secs}s · {arrow} {tok} tokens · esc to interrupt)\x1b[22m"
        ));
    }

    fn prompt_box(&mut self) {
        let w = self.ri(40, 100) as usize;
        let rule = "─".repeat(w);
        let pad = " ".repeat(w - 3);
        let mut o = format!("\r\n╭{rule}╮\r\n│ ❯ {pad}│\r\n╰{rule}╯\r\n");
        o.push_str(if self.rnd() < 0.5 {
            "  \x1b[2m? for shortcuts\x1b[22m"
        } else {
            "  \x1b[2m⏵⏵ bypass permissions on (shift+tab to cycle)\x1b[22m"
        });
        self.push(&o);
    }

    fn completion(&mut self) {
        let r = self.rnd();
        let d = if r < 0.4 {
            format!("{}s", self.ri(1, 59))
        } else if r < 0.9 {
            let m = self.ri(1, 59);
            let s = self.ri(0, 59);
            format!("{m}m {s}s")
        } else {
            let h = self.ri(1, 5);
            let m = self.ri(0, 59);
            let s = self.ri(0, 59);
            format!("{h}h {m}m {s}s")
        };
        let form = self.rnd();
        if form < 0.5 {
            self.push(&format!("\r\n✻ Worked for {d}\r\n"));
        } else if form < 0.9 {
            self.push(&format!("\r\n\x1b[2m✻ Worked for {d}\x1b[22m\r\n"));
        } else {
            // Codeman's `\b` fails after the SGR's `m`: this form is invisible to it.
            self.push(&format!("\r\n\x1b[2mWorked for {d}\x1b[22m\r\n"));
        }
    }

    fn code_block(&mut self) {
        let n = self.ri(3, 12);
        let first = self.ri(1, 900);
        for ln in first..first + n {
            let r = self.rnd();
            let count = self.ri(3, 9);
            let body = self.words(count).join(" ");
            let line = if r < 0.2 {
                format!("\x1b[32m{ln:>5} +  {body}\x1b[39m\r\n")
            } else if r < 0.35 {
                format!("\x1b[31m{ln:>5} -  {body}\x1b[39m\r\n")
            } else {
                format!("{ln:>5} │  {body}\r\n")
            };
            self.push(&line);
        }
    }
}

/// Generates `bytes` bytes of the stream for `seed`, cut back to a UTF-8 boundary, exactly as
/// `gen-stream.js --bytes <bytes> --seed <seed>` does.
pub fn generate_stream(bytes: usize, seed: u32) -> Vec<u8> {
    let mut g = Generator {
        state: seed,
        out: Vec::with_capacity(bytes + 4096),
    };
    while g.out.len() < bytes {
        g.segment();
    }
    let mut buf = g.out;
    let mut cut = bytes.min(buf.len());
    while cut > 0 && cut < buf.len() && (buf[cut] & 0xc0) == 0x80 {
        cut -= 1;
    }
    buf.truncate(cut);
    buf
}

/// The 50 MiB reference stream (`gen-stream.js` with its defaults).
pub fn reference_stream() -> Vec<u8> {
    generate_stream(REFERENCE_BYTES, REFERENCE_SEED)
}
