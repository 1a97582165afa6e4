//! Workspace benchmarks, each against its named baseline measured in the same run:
//!
//! - `create_remove`: `TempWorkspace::create` + `close` vs a bare `tempfile::TempDir`
//!   (target: within 1.5×);
//! - `remove_10k`: `remove_tree` on a 10,000-file tree vs `rm -rf` as a subprocess on the
//!   same tree (target: within 1.3×);
//! - `usage_10k`: a usage scan of that tree (files created since the snapshot).

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use hyoka_workspace::{
    KeepPolicy, MarkerOwner, RunId, RunVerdict, Snapshot, TempWorkspace, WorkspaceOptions,
    remove_tree, scan,
};

fn options(root: &Path) -> WorkspaceOptions {
    WorkspaceOptions {
        root: root.to_owned(),
        // What `hyoka run` writes: a default run id, an instance token, the owner's pid (the
        // marker then is 55 bytes, still inside an ext4 inode).
        run_id: RunId::new("20261129-120000-abc123").expect("valid id"),
        eval_id: None,
        keep: KeepPolicy::Never,
        starter: None,
        inject: Vec::new(),
        instance: Some("0123456789abcdef".to_owned()),
        owner: Some(MarkerOwner::pid(4_194_303)),
    }
}

fn create_remove(c: &mut Criterion) {
    let root = tempfile::tempdir().expect("scratch");
    let mut group = c.benchmark_group("create_remove");
    group.bench_function("baseline/tempfile_TempDir", |b| {
        b.iter(|| {
            let dir = tempfile::Builder::new()
                .prefix("hyoka-bench-")
                .tempdir_in(root.path())
                .expect("tempdir");
            black_box(dir.path());
            drop(dir);
        });
    });
    group.bench_function("hyoka/TempWorkspace", |b| {
        let options = options(root.path());
        b.iter(|| {
            let ws = TempWorkspace::create(&options).expect("create");
            black_box(ws.close(RunVerdict::Success).expect("close"));
        });
    });
    group.finish();
}

fn remove_10k(c: &mut Criterion) {
    let root = tempfile::tempdir().expect("scratch");
    let mut group = c.benchmark_group("remove_10k");
    group.sample_size(20);
    let setup = || {
        let dir = tempfile::Builder::new()
            .tempdir_in(root.path())
            .expect("tree")
            .keep();
        hyoka_benches::tree(&dir, 100, 100);
        dir
    };
    group.bench_function("baseline/rm_-rf", |b| {
        b.iter_batched(
            setup,
            |dir| {
                let status = Command::new("rm")
                    .arg("-rf")
                    .arg(&dir)
                    .status()
                    .expect("rm");
                assert!(status.success());
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("hyoka/remove_tree", |b| {
        b.iter_batched(
            setup,
            |dir| assert!(remove_tree(&dir).is_complete()),
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn usage_10k(c: &mut Criterion) {
    let root = tempfile::tempdir().expect("scratch");
    let empty = Snapshot::default();
    hyoka_benches::tree(root.path(), 100, 100);
    let mut group = c.benchmark_group("usage_10k");
    group.bench_function("hyoka/scan", |b| {
        b.iter(|| {
            let usage = scan(root.path(), &empty).expect("scan");
            assert_eq!(usage.files, 10_000);
        });
    });
    group.bench_function("baseline/du_-s", |b| {
        b.iter(|| {
            let status = Command::new("du")
                .arg("-s")
                .arg(root.path())
                .output()
                .expect("du");
            assert!(status.status.success());
        });
    });
    group.finish();
}

criterion_group!(benches, create_remove, remove_10k, usage_10k);
criterion_main!(benches);
