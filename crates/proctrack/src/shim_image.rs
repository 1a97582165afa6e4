//! A shim held in memory: a sealed `memfd` copy of a shim program, executed through
//! `/proc/self/fd/<n>`.
//!
//! A shim starts for every agent, service and scorer process, so what its exec costs is paid
//! twice per trial. A dynamically linked glibc program spends most of its start in the loader
//! and in glibc's CPU probing (each `CPUID` traps to the hypervisor on a virtual machine: about
//! 1 ms of CPU per exec here), a static musl one almost none (0.13 ms). hyoka embeds such a
//! build of its shim and runs it from memory, so the fast shim needs no file beside hyoka that
//! could go missing, be stale or be replaced.
//!
//! The copy is sealed (no write, resize, mode change or further seal), so nothing, not even a
//! process of the same user, can change what the next spawn runs. Its descriptor is
//! close-on-exec: an ELF program may be executed through its own descriptor's
//! `/proc/self/fd` path because the kernel opens the program before it closes those
//! descriptors (this is how glibc's `fexecve` works without `execveat`), so no child keeps it.

use std::io::Write as _;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{MemfdFlags, SealFlags};

/// A shim program sealed in memory and executed through `/proc/self/fd/<n>`: no file beside
/// hyoka that could go missing, be stale or be replaced, and, for a static build, an exec
/// without the dynamic loader. Sealed against writes, resizes and mode changes; its
/// descriptor is close-on-exec, so no child keeps it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ShimImage {
    fd: Arc<OwnedFd>,
    path: PathBuf,
}

impl PartialEq for ShimImage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.fd, &other.fd)
    }
}

impl Eq for ShimImage {}

impl ShimImage {
    /// Seals `program` (an executable's bytes) in a new `memfd`.
    ///
    /// # Errors
    /// When the kernel has no `memfd`, refuses to seal it, or makes it not executable
    /// (`vm.memfd_noexec = 2`): the caller then runs the shim from its file.
    pub fn new(program: &[u8]) -> std::io::Result<Self> {
        let sealing = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING;
        // `MFD_EXEC` (Linux 6.3) asks for an executable copy where `vm.memfd_noexec = 1`
        // would otherwise make it not executable; older kernels refuse the flag.
        let fd = rustix::fs::memfd_create("hyoka-shim", sealing | MemfdFlags::EXEC)
            .or_else(|_| rustix::fs::memfd_create("hyoka-shim", sealing))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(program)?;
        let fd = OwnedFd::from(file);
        let seals = SealFlags::WRITE | SealFlags::GROW | SealFlags::SHRINK | SealFlags::SEAL;
        // `F_SEAL_EXEC` (Linux 6.3) keeps its mode too; older kernels refuse that seal.
        rustix::fs::fcntl_add_seals(&fd, seals | SealFlags::EXEC)
            .or_else(|_| rustix::fs::fcntl_add_seals(&fd, seals))?;
        let mode = rustix::fs::fstat(&fd)?.st_mode;
        if mode & 0o111 == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "this kernel makes a memfd not executable (vm.memfd_noexec)",
            ));
        }
        let path = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        Ok(Self {
            fd: Arc::new(fd),
            path,
        })
    }

    /// The path to execute it by, valid in this process and in a child that has not left
    /// this process's `/proc` (not in a sandbox's mount namespace).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The image runs as the program it copies, and neither it nor its seals can be changed.
    #[test]
    fn a_sealed_image_runs_and_cannot_be_changed() {
        let program = std::fs::read("/bin/sh").unwrap();
        let image = ShimImage::new(&program).unwrap();
        let out = std::process::Command::new(image.path())
            .args(["-c", "echo from memory"])
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"from memory\n", "{out:?}");
        let fd = image.fd.as_ref();
        assert!(rustix::io::write(fd, b"x").is_err(), "written");
        assert!(rustix::fs::ftruncate(fd, 1).is_err(), "resized");
        let seals = rustix::fs::fcntl_get_seals(fd).unwrap();
        assert!(
            seals.contains(SealFlags::SEAL | SealFlags::WRITE),
            "{seals:?}"
        );
        // The descriptor is not handed to children.
        let flags = rustix::io::fcntl_getfd(fd).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        assert_eq!(image.clone(), image);
        assert_ne!(ShimImage::new(&program).unwrap(), image);
    }
}
