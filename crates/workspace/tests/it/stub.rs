//! The in-memory stub and the mock behave like the real workspace for callers.

use std::path::Path;

use hyoka_workspace::{EntryKind, MemWorkspace, MockWorkspace, Usage, Workspace, WorkspaceError};

#[test]
fn mem_workspace_follows_the_same_rules() {
    let ws = MemWorkspace::with_files([
        ("README.md", b"starter".to_vec()),
        ("src/lib.rs", b"".to_vec()),
    ])
    .unwrap();
    assert_eq!(ws.usage().unwrap(), Usage::default());
    ws.write_file(Path::new("src/lib.rs"), b"pub fn f() {}")
        .unwrap();
    ws.write_file(Path::new("tests/t.rs"), b"#[test]").unwrap();
    ws.remove(Path::new("README.md")).unwrap();
    assert_eq!(
        ws.usage().unwrap(),
        Usage {
            files: 2,
            bytes: 13 + 7,
            created: 1,
            changed: 1,
            deleted: 1
        }
    );
    assert_eq!(
        ws.read_file(Path::new("src/lib.rs")).unwrap(),
        b"pub fn f() {}"
    );
    let root: Vec<_> = ws
        .list(Path::new(""))
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    assert_eq!(
        root,
        [
            ("src".into(), EntryKind::Dir),
            ("tests".into(), EntryKind::Dir)
        ]
    );
    assert!(matches!(
        ws.write_file(Path::new("../x"), b""),
        Err(WorkspaceError::InvalidPath { .. })
    ));
    assert!(matches!(
        ws.read_file(Path::new("/abs")),
        Err(WorkspaceError::InvalidPath { .. })
    ));
    assert!(matches!(
        ws.read_file(Path::new("nope")),
        Err(WorkspaceError::NotFound { .. })
    ));
}

#[test]
fn a_harness_can_be_tested_against_the_mock() {
    // A downstream function that only knows the trait.
    fn save_result(ws: &dyn Workspace) -> Result<u64, WorkspaceError> {
        ws.write_file(Path::new("result.json"), b"{}")?;
        Ok(ws.usage()?.files)
    }
    let mut mock = MockWorkspace::new();
    mock.expect_write_file()
        .withf(|path, contents| path == Path::new("result.json") && contents == b"{}")
        .times(1)
        .returning(|_, _| Ok(()));
    mock.expect_usage().times(1).returning(|| {
        Ok(Usage {
            files: 1,
            bytes: 2,
            created: 1,
            ..Usage::default()
        })
    });
    assert_eq!(save_result(&mock).unwrap(), 1);
}
