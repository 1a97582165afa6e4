//! Tests of the Dockerfile reader: what the host places (`WORKDIR`, `ENV`, `COPY`) and what
//! it records as steps it does not perform.

use super::*;

#[track_caller]
fn check(text: &str) -> Dockerfile {
    Dockerfile::parse(text).unwrap_or_else(|e| panic!("should parse: {e}"))
}

fn context(path: &str) -> CopySource {
    CopySource::Context(path.to_owned())
}

#[test]
fn the_cookbook_images_read_as_written() {
    let simple = check(include_str!(
        "../../../eval/tests/fixtures/harbor/cookbook/simple-task/environment/Dockerfile"
    ));
    assert_eq!(simple.from, vec!["ubuntu:24.04"]);
    assert_eq!(simple.workdir.as_deref(), Some("/app"));
    assert!(simple.steps.is_empty() && simple.copies.is_empty());

    let skills = check(include_str!(
        "../../../eval/tests/fixtures/harbor/cookbook/skills/environment/Dockerfile"
    ));
    assert_eq!(skills.workdir.as_deref(), Some("/app"));
    assert_eq!(
        skills.copies,
        vec![Copy {
            line: 9,
            sources: vec![context("skills/")],
            dest: "/skills".into(),
            dest_is_dir: true,
        }]
    );
    assert_eq!(skills.steps.len(), 1);
    assert_eq!(skills.steps[0].kind, StepKind::Run);
    assert_eq!(skills.steps[0].line, 3);
    assert!(skills.steps[0].text.starts_with("RUN apt-get update"));
}

#[test]
fn continuations_comments_and_case_are_handled() {
    let file = check(
        "# syntax=docker/dockerfile:1\nfrom debian AS base\n\nrun apt-get update \\\n  # a comment inside\n  && apt-get install -y \\\n  python3\nWorkdir /srv\nworkdir app\n",
    );
    assert_eq!(file.workdir.as_deref(), Some("/srv/app"));
    assert_eq!(file.steps.len(), 1);
    assert_eq!(file.steps[0].line, 4);
    assert_eq!(
        file.steps[0].text,
        "RUN apt-get update  && apt-get install -y  python3"
    );
}

#[test]
fn env_and_arg_substitute_where_docker_does() {
    let file = check(
        "ARG BASE=/opt\nFROM ubuntu\nARG SUB=work\nENV ROOT=${BASE:-/x}/$SUB NAME=\"two words\"\nENV LEGACY a value with spaces\nWORKDIR $ROOT\nCOPY ${SUB}.txt ./\n",
    );
    assert_eq!(
        file.env,
        vec![
            // The global BASE is not declared again in the stage: its default applies.
            ("ROOT".into(), "/x/work".into()),
            ("NAME".into(), "two words".into()),
            ("LEGACY".into(), "a value with spaces".into()),
        ]
    );
    assert_eq!(file.workdir.as_deref(), Some("/x/work"));
    assert_eq!(file.copies[0].sources, vec![context("work.txt")]);
    assert_eq!(file.copies[0].dest, "/x/work");
    assert!(file.copies[0].dest_is_dir);
}

#[test]
fn copies_resolve_against_the_workdir_of_their_place() {
    let file = check(
        "FROM x\nCOPY a.txt rel/b.txt\nWORKDIR /app\nCOPY [\"data/one.csv\", \"data/two.csv\", \"/app/data/\"]\nCOPY --chown=1000:1000 c.txt .\nCOPY *.py lib/\n",
    );
    let dests: Vec<(&str, bool)> = file
        .copies
        .iter()
        .map(|c| (c.dest.as_str(), c.dest_is_dir))
        .collect();
    assert_eq!(
        dests,
        vec![
            ("/rel/b.txt", false),
            ("/app/data", true),
            ("/app", false),
            ("/app/lib", true),
        ]
    );
}

#[test]
fn what_the_host_does_not_do_is_a_step() {
    let file = check(
        "FROM golang AS build\nRUN go build -o /out/tool\nFROM ubuntu\nCOPY --from=build /out/tool /usr/local/bin/\nADD https://example.com/x.tar.gz /opt/\nADD data.tar.gz /data/\nUSER nobody\nUSER root\nENTRYPOINT [\"/entrypoint.sh\"]\nCMD [\"sleep\", \"infinity\"]\nWORKDIR /app\n",
    );
    let kinds: Vec<StepKind> = file.steps.iter().map(|s| s.kind).collect();
    // The first stage's RUN is not the final image's.
    assert_eq!(
        kinds,
        vec![
            StepKind::CopyFrom,
            StepKind::AddRemote,
            StepKind::AddArchive,
            StepKind::User,
            StepKind::Entrypoint,
        ]
    );
    assert_eq!(file.from, vec!["golang", "ubuntu"]);
    assert!(file.copies.is_empty());
}

#[test]
fn heredocs_are_read_and_copy_heredocs_keep_their_text() {
    let file = check(
        "FROM x\nRUN <<EOF\necho hi\nEOF\nCOPY <<-CONF /etc/app.conf\n\tkey = 1\nCONF\nWORKDIR /app\n",
    );
    assert_eq!(file.steps.len(), 1);
    assert_eq!(
        file.copies[0].sources,
        vec![CopySource::Text("key = 1\n".into())]
    );
    assert_eq!(file.copies[0].dest, "/etc/app.conf");
    assert_eq!(file.workdir.as_deref(), Some("/app"));
}

#[test]
fn the_escape_directive_changes_the_continuation() {
    let file = check("# escape=`\nFROM x\nRUN echo one `\n  two\nWORKDIR /app\\\n");
    assert_eq!(file.steps[0].text, "RUN echo one  two");
    // A backslash no longer continues a line.
    assert_eq!(file.workdir.as_deref(), Some("/app\\"));
}

#[test]
fn bad_files_are_refused_with_their_line() {
    for (text, line, needle) in [
        (
            "FROM x\nFROBNICATE y\n",
            2,
            "unknown instruction FROBNICATE",
        ),
        ("FROM x\nRUN <<EOF\necho\n", 2, "never ends"),
        ("FROM x\nCOPY\n", 2, "no destination"),
        ("FROM x\nCOPY onlyone\n", 2, "no source"),
        ("FROM x\nWORKDIR\n", 2, "no directory"),
        ("FROM x\nENV\n", 2, "sets nothing"),
        ("FROM x\nCOPY [\"a\", 1]\n", 2, "JSON form"),
    ] {
        let err = Dockerfile::parse(text).expect_err(text);
        assert_eq!(err.line, line, "{text:?}");
        assert!(err.message.contains(needle), "{err} should say {needle:?}");
    }
}

#[test]
fn join_abs_normalizes() {
    assert_eq!(join_abs("/app", "../etc/./x/"), "/etc/x");
    assert_eq!(join_abs("/app", "/abs"), "/abs");
    assert_eq!(join_abs("/", "../../.."), "/");
}
