//! What a task's `environment/Dockerfile` says about the environment, read without building
//! it.
//!
//! The host environment gives a task the host's own system in place of the image, so only
//! the instructions that place things are taken: the final stage's `WORKDIR` (where the agent
//! works), `ENV`, and `COPY`/`ADD` of files from the build context. Everything the host does
//! not do is kept as a [`Step`] with its line, so a caller can say exactly why an image is
//! needed: `RUN`, `COPY --from`, `ADD` of a URL or an archive, a user other than root, an
//! `ENTRYPOINT` (which starts services in the container).
//!
//! The syntax follows Docker's reference (`docs.docker.com/reference/dockerfile`): parser
//! directives (`# escape=`), comment lines, line continuations with the escape character,
//! instructions in any case, JSON (exec) and shell forms, `ARG` and `ENV` substitution
//! (`$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR:+value}`) in `WORKDIR`, `ENV`, `COPY`, `ADD`,
//! `USER` and `FROM`, heredocs (`COPY <<EOF /etc/x` keeps the text; any other heredoc is
//! consumed and recorded as a step).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// The most bytes of a Dockerfile read (real ones are a few KiB).
pub const MAX_DOCKERFILE_BYTES: u64 = 1024 * 1024;

/// A Dockerfile's final stage, as the host environment needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dockerfile {
    /// The `FROM` image of each stage, in order (the last is the image the task runs in).
    pub from: Vec<String>,
    /// The final stage's `WORKDIR`, absolute; `None` when the stage sets none (the image's
    /// own, usually `/`).
    pub workdir: Option<String>,
    /// The final stage's `ENV` variables, in order (a later one replaces an earlier one).
    pub env: Vec<(String, String)>,
    /// The final stage's `COPY`/`ADD` of build-context files, in order.
    pub copies: Vec<Copy>,
    /// What the host does not do, in order.
    pub steps: Vec<Step>,
}

/// One `COPY` or `ADD` of the build context (or of heredoc text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copy {
    /// The line it starts on (1-based).
    pub line: usize,
    /// What is copied.
    pub sources: Vec<CopySource>,
    /// The destination, absolute (a relative one is resolved against the `WORKDIR` of its
    /// place in the file).
    pub dest: String,
    /// Whether the destination names a directory (ends with `/`, or there are several
    /// sources or a wildcard), so sources land inside it under their own names.
    pub dest_is_dir: bool,
}

/// A source of a [`Copy`](struct@Copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopySource {
    /// A path relative to the build context (`.` is the whole context); it may end with a
    /// wildcard in its last component (`*.py`).
    Context(String),
    /// The text of a heredoc (`COPY <<EOF /etc/motd`).
    Text(String),
}

/// An instruction the host environment does not perform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The line it starts on (1-based).
    pub line: usize,
    /// What kind of step it is.
    pub kind: StepKind,
    /// The instruction as written (continuations joined), at most 200 characters.
    pub text: String,
}

/// The kinds of [`Step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// `RUN`: a build command.
    Run,
    /// `COPY --from`: files of another stage or image.
    CopyFrom,
    /// `ADD` of a URL or a git repository.
    AddRemote,
    /// `ADD` of a local archive (Docker extracts it).
    AddArchive,
    /// `USER` other than root.
    User,
    /// `ENTRYPOINT`: the container's start command (services, setup).
    Entrypoint,
}

impl StepKind {
    /// A short name for reasons (`RUN`, `COPY --from`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Run => "RUN",
            Self::CopyFrom => "COPY --from",
            Self::AddRemote => "ADD of a URL",
            Self::AddArchive => "ADD of an archive",
            Self::User => "USER",
            Self::Entrypoint => "ENTRYPOINT",
        }
    }
}

/// A Dockerfile the reader cannot make sense of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerfileError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for DockerfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// One logical instruction: its keyword, its arguments (continuations joined) and the
/// heredoc bodies that follow it.
struct Instruction {
    line: usize,
    keyword: String,
    args: String,
    heredocs: Vec<String>,
}

impl Dockerfile {
    /// Reads `text`, a Dockerfile.
    ///
    /// # Errors
    /// [`DockerfileError`] for an instruction that cannot be read: an unknown keyword, a
    /// heredoc that never ends, a `COPY` without a destination, a `WORKDIR` or `ENV` that is
    /// malformed.
    pub fn parse(text: &str) -> Result<Self, DockerfileError> {
        let mut file = Self::default();
        // `ARG`s before the first `FROM` are global: usable in `FROM` lines, and inside a
        // stage only once the stage declares them again (taking the global default).
        let mut global: BTreeMap<String, String> = BTreeMap::new();
        let mut args: BTreeMap<String, String> = BTreeMap::new();
        let mut stage = Stage::default();
        for inst in instructions(text)? {
            let err = |message: String| DockerfileError {
                line: inst.line,
                message,
            };
            let mut vars = args.clone();
            vars.extend(stage.env.iter().cloned());
            match inst.keyword.as_str() {
                "FROM" => {
                    let words = shell_words(&inst.args);
                    let image = words
                        .iter()
                        .find(|w| !w.starts_with("--"))
                        .ok_or_else(|| err("FROM names no image".into()))?;
                    file.from.push(substitute(image, &global));
                    stage = Stage::default();
                    args.clear();
                }
                "ARG" => {
                    for word in shell_words(&inst.args) {
                        let (name, value) = if let Some((name, value)) = word.split_once('=') {
                            (name.to_owned(), substitute(value, &vars))
                        } else {
                            let inherited = global.get(&word).cloned().unwrap_or_default();
                            (word, inherited)
                        };
                        if file.from.is_empty() {
                            global.insert(name, value);
                        } else {
                            args.insert(name, value);
                        }
                    }
                }
                "ENV" => {
                    for (name, value) in env_pairs(&inst.args).map_err(err)? {
                        let value = substitute(&value, &vars);
                        stage.env.retain(|(n, _)| *n != name);
                        stage.env.push((name.clone(), value.clone()));
                        vars.insert(name, value);
                    }
                }
                "WORKDIR" => {
                    let dir = substitute(unquote(inst.args.trim()), &vars);
                    if dir.is_empty() {
                        return Err(err("WORKDIR names no directory".into()));
                    }
                    stage.workdir = Some(join_abs(stage.workdir.as_deref().unwrap_or("/"), &dir));
                }
                "COPY" | "ADD" => {
                    stage_copy(&inst, &vars, &mut stage).map_err(err)?;
                }
                "RUN" => stage.step(&inst, StepKind::Run),
                "USER" => {
                    let user = substitute(inst.args.trim(), &vars);
                    let name = user.split(':').next().unwrap_or_default();
                    if !matches!(name, "root" | "0") {
                        stage.step(&inst, StepKind::User);
                    }
                }
                "ENTRYPOINT" => stage.step(&inst, StepKind::Entrypoint),
                "CMD" | "LABEL" | "MAINTAINER" | "EXPOSE" | "VOLUME" | "STOPSIGNAL"
                | "HEALTHCHECK" | "SHELL" | "ONBUILD" => {}
                other => return Err(err(format!("unknown instruction {other}"))),
            }
        }
        file.workdir = stage.workdir;
        file.env = stage.env;
        file.copies = stage.copies;
        file.steps = stage.steps;
        Ok(file)
    }
}

/// What one stage has gathered so far.
#[derive(Default)]
struct Stage {
    workdir: Option<String>,
    env: Vec<(String, String)>,
    copies: Vec<Copy>,
    steps: Vec<Step>,
}

impl Stage {
    fn step(&mut self, inst: &Instruction, kind: StepKind) {
        let mut text = format!("{} {}", inst.keyword, inst.args.trim());
        if text.chars().count() > 200 {
            text = text.chars().take(199).collect::<String>() + "…";
        }
        self.steps.push(Step {
            line: inst.line,
            kind,
            text,
        });
    }
}

fn stage_copy(
    inst: &Instruction,
    vars: &BTreeMap<String, String>,
    stage: &mut Stage,
) -> Result<(), String> {
    let is_add = inst.keyword == "ADD";
    let mut words: Vec<String> = if inst.args.trim_start().starts_with('[') {
        serde_json::from_str::<Vec<String>>(inst.args.trim()).map_err(|e| {
            format!(
                "{} in JSON form is not a list of strings: {e}",
                inst.keyword
            )
        })?
    } else {
        shell_words(&inst.args)
    };
    let mut from = false;
    words.retain(|w| {
        if let Some(flag) = w.strip_prefix("--") {
            from |= flag.starts_with("from=");
            false
        } else {
            true
        }
    });
    if from {
        stage.step(inst, StepKind::CopyFrom);
        return Ok(());
    }
    let words: Vec<String> = words.iter().map(|w| substitute(w, vars)).collect();
    let Some((dest, sources)) = words.split_last() else {
        return Err(format!("{} names no destination", inst.keyword));
    };
    let mut heredocs = inst.heredocs.iter();
    let mut kept = Vec::new();
    for source in sources {
        if heredoc_marker(source).is_some() {
            match heredocs.next() {
                Some(body) => kept.push(CopySource::Text(body.clone())),
                None => return Err(format!("{} heredoc {source} has no body", inst.keyword)),
            }
            continue;
        }
        if is_add && (source.contains("://") || source.starts_with("git@")) {
            stage.step(inst, StepKind::AddRemote);
            return Ok(());
        }
        let lower = source.to_ascii_lowercase();
        if is_add
            && [
                ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst",
            ]
            .iter()
            .any(|ext| lower.ends_with(ext))
        {
            stage.step(inst, StepKind::AddArchive);
            return Ok(());
        }
        kept.push(CopySource::Context(source.clone()));
    }
    if kept.is_empty() {
        return Err(format!("{} names no source", inst.keyword));
    }
    let wildcard = kept
        .iter()
        .any(|s| matches!(s, CopySource::Context(p) if p.contains(['*', '?', '['])));
    let dest_is_dir = dest.ends_with('/') || kept.len() > 1 || wildcard;
    let base = stage.workdir.as_deref().unwrap_or("/");
    stage.copies.push(Copy {
        line: inst.line,
        sources: kept,
        dest: join_abs(base, dest),
        dest_is_dir,
    });
    Ok(())
}

/// `<<EOF`, `<<-EOF`, `<<"EOF"`, `<<'EOF'`: the heredoc's end word.
fn heredoc_marker(word: &str) -> Option<String> {
    let rest = word.strip_prefix("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let rest = rest.trim_matches(|c| c == '"' || c == '\'');
    (!rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| rest.to_owned())
}

/// Splits the file into instructions: directives, comments, continuations and heredocs.
fn instructions(text: &str) -> Result<Vec<Instruction>, DockerfileError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut escape = '\\';
    // Parser directives: `# key=value` lines at the very top, before anything else.
    for line in &lines {
        let Some(body) = line.trim().strip_prefix('#') else {
            break;
        };
        let Some((key, value)) = body.split_once('=') else {
            break;
        };
        match key.trim().to_ascii_lowercase().as_str() {
            "escape" => match value.trim() {
                "`" => escape = '`',
                "\\" => escape = '\\',
                other => {
                    return Err(DockerfileError {
                        line: 1,
                        message: format!("invalid escape directive {other:?}"),
                    });
                }
            },
            "syntax" | "check" => {}
            _ => break,
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let first = lines[i].trim();
        i += 1;
        if first.is_empty() || first.starts_with('#') {
            continue;
        }
        let mut logical = String::new();
        let mut current = first.to_owned();
        loop {
            let trimmed = current.trim_end();
            if let Some(body) = trimmed.strip_suffix(escape) {
                logical.push_str(body);
                logical.push(' ');
                // The next line that is not a comment or empty continues this one.
                loop {
                    if i >= lines.len() {
                        current = String::new();
                        break;
                    }
                    let next = lines[i].trim();
                    i += 1;
                    if next.is_empty() || next.starts_with('#') {
                        continue;
                    }
                    next.clone_into(&mut current);
                    break;
                }
                if current.is_empty() {
                    break;
                }
            } else {
                logical.push_str(trimmed);
                break;
            }
        }
        let (keyword, args) = match logical.split_once(char::is_whitespace) {
            Some((k, a)) => (k.to_ascii_uppercase(), a.trim().to_owned()),
            None => (logical.to_ascii_uppercase(), String::new()),
        };
        let heredocs = read_heredocs(&args, &lines, &mut i, start)?;
        out.push(Instruction {
            line: start + 1,
            keyword,
            args,
            heredocs,
        });
    }
    Ok(out)
}

/// The heredoc bodies an instruction's arguments ask for: each `<<WORD` takes the lines
/// from `*i` up to one that is WORD.
fn read_heredocs(
    args: &str,
    lines: &[&str],
    i: &mut usize,
    start: usize,
) -> Result<Vec<String>, DockerfileError> {
    let mut heredocs = Vec::new();
    for word in args.split_whitespace() {
        let Some(end) = heredoc_marker(word) else {
            continue;
        };
        let strip_tabs = word.starts_with("<<-");
        let mut body = String::new();
        loop {
            let Some(line) = lines.get(*i) else {
                return Err(DockerfileError {
                    line: start + 1,
                    message: format!("heredoc {end} never ends"),
                });
            };
            *i += 1;
            let line = if strip_tabs {
                line.trim_start_matches('\t')
            } else {
                line
            };
            if line.trim_end() == end {
                break;
            }
            body.push_str(line);
            body.push('\n');
        }
        heredocs.push(body);
    }
    Ok(heredocs)
}

/// Words of a shell-form argument list: whitespace-separated, with single and double quotes
/// grouping and a backslash escaping the next character (outside single quotes).
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.push(c),
            (Some(_), '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn unquote(text: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(q).and_then(|t| t.strip_suffix(q)) {
            return inner;
        }
    }
    text
}

/// `ENV a=1 b="two words"` or the legacy `ENV name value with spaces`.
fn env_pairs(args: &str) -> Result<Vec<(String, String)>, String> {
    let words = shell_words(args);
    let Some(first) = words.first() else {
        return Err("ENV sets nothing".into());
    };
    if !first.contains('=') {
        // The legacy form: the rest of the line is the value.
        let value = args.trim()[first.len()..].trim();
        return Ok(vec![(first.clone(), unquote(value).to_owned())]);
    }
    words
        .into_iter()
        .map(|word| match word.split_once('=') {
            Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
            _ => Err(format!("ENV {word:?} is not NAME=VALUE")),
        })
        .collect()
}

/// Replaces `$NAME`, `${NAME}`, `${NAME:-default}` and `${NAME:+value}` with `vars`
/// (unknown names are empty, as Docker does); `\$` stays a dollar sign.
fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'$') => {
                out.push('$');
                chars.next();
            }
            '$' if chars.peek() == Some(&'{') => {
                chars.next();
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                    inner.push(c);
                }
                let (name, modifier) = match inner.find(":-").or_else(|| inner.find(":+")) {
                    Some(at) => (&inner[..at], Some((&inner[at..at + 2], &inner[at + 2..]))),
                    None => (inner.as_str(), None),
                };
                let value = vars.get(name).filter(|v| !v.is_empty());
                match (modifier, value) {
                    (Some((":-", default)), None) => out.push_str(default),
                    (Some((":+", alt)), Some(_)) => out.push_str(alt),
                    (_, None) => {}
                    (_, Some(v)) => out.push_str(v),
                }
            }
            '$' if chars
                .peek()
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') =>
            {
                let mut name = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' {
                        name.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if let Some(v) = vars.get(&name) {
                    out.push_str(v);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// `path` resolved against the absolute directory `base`, normalized (`.` and `..` taken
/// out, never above `/`); a trailing `/` is kept off.
pub fn join_abs(base: &str, path: &str) -> String {
    let joined = if path.starts_with('/') {
        PathBuf::from(path)
    } else {
        Path::new(base).join(path)
    };
    let mut parts: Vec<String> = Vec::new();
    for component in joined.components() {
        match component {
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests;
