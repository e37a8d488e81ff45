//! Files in a session folder, and in any folder a person named, written
//! and read without following or replacing a link planted there, without
//! waiting on a FIFO, and private: folders 0700, files 0600 (set
//! explicitly, whatever the umask), unless a caller asks for another mode
//! (man pages are for everyone to read).
//!
//! A session folder may have been handed over by someone else (a copy, a
//! shared folder): its `logs/` or `out/` may be a symbolic link to the
//! reader's `~/.ssh`, its `logs/run-3.log` a link to their private file, a
//! `pictures/` entry a FIFO. So below a folder the person named, every
//! step is taken with `openat` and `O_NOFOLLOW` from the folder's own
//! descriptor (a link is refused, never followed: a swap between a check
//! and the open finds the open refused); a file is written whole to a new
//! file beside it (`O_EXCL`) and renamed over the name, which is refused
//! when it names anything but a regular file. Architecture Invariant:
//! whatever codeloop writes below a session folder, or reads there for
//! someone else to see (a picture embedded in a page), goes through here.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// The mode of a folder codeloop makes: its owner's alone.
pub const PRIVATE_DIR: u32 = 0o700;
/// The mode of a file codeloop writes: its owner's alone.
pub const PRIVATE_FILE: u32 = 0o600;

/// An error that says what was found where, and what to do.
fn refused(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} {what}: codeloop neither follows nor replaces links, FIFOs or devices in a folder it writes to or reads from for you (someone may have planted it there); remove it and try again",
            path.display()
        ),
    )
}

/// A name that is one plain component: not empty, not `.` or `..`, no
/// `/` and no NUL. What a tape says is joined to a folder only through
/// this (a node called `../../.local/lib/...` is no file name).
pub fn plain_name(name: &str) -> Result<&str, String> {
    if name.is_empty() {
        return Err("an empty name".into());
    }
    if name == "." || name == ".." {
        return Err(format!("`{name}`, which names a folder, not a file in it"));
    }
    if name.contains('/') || name.contains('\0') {
        return Err(format!(
            "`{}`, a path, not one name (it holds a `/` or a NUL)",
            name.escape_debug()
        ));
    }
    Ok(name)
}

/// `dir` joined with `name`, refused when `name` is not one plain
/// component ([`plain_name`]).
pub fn join_name(dir: &Path, name: &str) -> io::Result<PathBuf> {
    plain_name(name).map(|n| dir.join(n)).map_err(|why| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a file name: {why}"),
        )
    })
}

/// The plain components of a relative path, refused when it is absolute
/// or goes up (`..`).
pub fn relative_parts(rel: &Path) -> io::Result<Vec<&str>> {
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => match p.to_str() {
                Some(s) => parts.push(plain_name(s).map_err(|why| bad_relative(rel, &why))?),
                None => return Err(bad_relative(rel, "a name that is not UTF-8")),
            },
            Component::CurDir => {}
            Component::ParentDir => return Err(bad_relative(rel, "`..`")),
            Component::RootDir | Component::Prefix(_) => {
                return Err(bad_relative(rel, "an absolute path"));
            }
        }
    }
    if parts.is_empty() {
        return Err(bad_relative(rel, "no name"));
    }
    Ok(parts)
}

fn bad_relative(rel: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is not a path inside the folder (it has {why})",
            rel.display()
        ),
    )
}

/// An open folder: everything below it is reached from its descriptor.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

impl Folder {
    /// The folder at `path`, as the person named it (a link in the path
    /// they gave is theirs and followed).
    pub fn open(path: &Path) -> io::Result<Folder> {
        let base = OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = match rustix::fs::open(path, base | OFlags::RDONLY, Mode::empty()) {
            // One to pass through, not to read (0711): as a path alone.
            #[cfg(any(target_os = "linux", target_os = "android"))]
            Err(rustix::io::Errno::ACCESS) => {
                rustix::fs::open(path, base | OFlags::PATH, Mode::empty())
            }
            other => other,
        }
        .map_err(|e| with_path(path, e.into()))?;
        Ok(Folder {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The folder at `path`, made (with its missing parents) private
    /// when it is not there. An existing folder keeps its mode.
    ///
    /// The path is walked one step at a time from `/` (or the current
    /// folder), each step opened from the last one's descriptor without
    /// following a link: a folder made on the way is made there
    /// (`mkdirat`), set 0700 through its own descriptor, and gone on from
    /// through it, so nothing swapped in after it was made is followed. A
    /// link on the way is followed only when it is the person's own or
    /// root's (one another user owns may have been planted, as in a shared
    /// folder: refused, naming its owner); a file where a folder should be
    /// is refused.
    pub fn create(path: &Path) -> io::Result<Folder> {
        let start = if path.is_absolute() { "/" } else { "." };
        let mut here = Folder::open(Path::new(start))?;
        here.path = PathBuf::new();
        for c in path.components() {
            here = match c {
                Component::RootDir => Folder {
                    path: PathBuf::from("/"),
                    ..here
                },
                Component::CurDir => continue,
                Component::ParentDir => here.step("..", false)?,
                Component::Normal(name) => match name.to_str() {
                    Some(name) => here.step(name, true)?,
                    None => return Err(bad_relative(path, "a name that is not UTF-8")),
                },
                Component::Prefix(_) => return Err(bad_relative(path, "a prefix")),
            };
        }
        if here.path.as_os_str().is_empty() {
            here.path = PathBuf::from(".");
        }
        Ok(here)
    }

    /// One step of [`Folder::create`]: the folder `name` here, made when
    /// missing (`make`), a link followed only when it is this user's or
    /// root's.
    fn step(&self, name: &str, make: bool) -> io::Result<Folder> {
        let path = self.path.join(name);
        let open = |flags: OFlags| open_dir_at(&self.fd, name, flags);
        let made = |fd: OwnedFd| Folder {
            fd,
            path: path.clone(),
        };
        match open(OFlags::NOFOLLOW) {
            Ok(fd) => return Ok(made(fd)),
            Err(rustix::io::Errno::NOENT) if make => {}
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                    .map_err(|e| with_path(&path, e.into()))?;
                let kind = FileType::from_raw_mode(st.st_mode);
                if kind != FileType::Symlink {
                    return Err(refused(
                        &path,
                        &format!("is {}, not a folder", kind_words(kind)),
                    ));
                }
                let me = rustix::process::geteuid().as_raw();
                if st.st_uid != me && st.st_uid != 0 {
                    return Err(refused(
                        &path,
                        &format!(
                            "is a symbolic link another user (uid {}) owns, not followed",
                            st.st_uid
                        ),
                    ));
                }
                return open(OFlags::empty())
                    .map(made)
                    .map_err(|e| with_path(&path, e.into()));
            }
            Err(e) => return Err(with_path(&path, e.into())),
        }
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(PRIVATE_DIR)) {
            Ok(()) => {}
            // Made meanwhile: taken as it is found, as if it had been there.
            Err(rustix::io::Errno::EXIST) => return self.step(name, false),
            Err(e) => return Err(with_path(&path, e.into())),
        }
        let fd = open(OFlags::NOFOLLOW).map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => refused(
                &path,
                "was swapped for something else as soon as codeloop made it",
            ),
            e => with_path(&path, e.into()),
        })?;
        // Through its own descriptor: whatever the umask, and never
        // through a name someone could swap.
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(PRIVATE_DIR)).map_err(|e| {
            refused(
                &path,
                &format!("could not be made private ({e}): it is not the folder codeloop made"),
            )
        })?;
        Ok(made(fd))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder `name` in this one, made private when missing when
    /// `create`; a link there is refused.
    pub fn sub(&self, name: &str, create: bool) -> io::Result<Folder> {
        let path = join_name(&self.path, name)?;
        if create {
            match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(PRIVATE_DIR)) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(with_path(&path, e.into())),
            }
        }
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => {
                refused(&path, &format!("is {}, not a folder", self.kind_of(name)))
            }
            e => with_path(&path, e.into()),
        })?;
        Ok(Folder { fd, path })
    }

    /// The folder at `rel` below this one, each step as [`Folder::sub`].
    pub fn descend(&self, rel: &Path, create: bool) -> io::Result<Folder> {
        let mut here = Folder {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        };
        for part in relative_parts(rel)? {
            here = here.sub(part, create)?;
        }
        Ok(here)
    }

    /// What `name` is here, in words, looked at without following it.
    fn kind_of(&self, name: &str) -> &'static str {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => kind_words(FileType::from_raw_mode(st.st_mode)),
            Err(_) => "missing",
        }
    }

    /// Refused when `name` here is there and is not a regular file.
    fn check_replaceable(&self, name: &str) -> io::Result<()> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => {
                let kind = FileType::from_raw_mode(st.st_mode);
                if kind == FileType::RegularFile {
                    Ok(())
                } else {
                    Err(refused(
                        &self.path.join(name),
                        &format!("is {}, not a regular file", kind_words(kind)),
                    ))
                }
            }
            Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(with_path(&self.path.join(name), e.into())),
        }
    }

    /// Write `bytes` as the file `name` here, with `mode`: written whole
    /// to a new file beside it, then renamed over the name. Refused when
    /// `name` is a link, a FIFO, a folder or a device.
    pub fn write(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let path = join_name(&self.path, name)?;
        self.check_replaceable(name)?;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tmp = format!(
            ".{name}.{}-{}.part",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let fd = rustix::fs::openat(
            &self.fd,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode & 0o777),
        )
        .map_err(|e| with_path(&path, e.into()))?;
        let written = (|| {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o777))?;
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            file.flush()?;
            drop(file);
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)?;
            Ok::<(), io::Error>(())
        })();
        if let Err(e) = written {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
            return Err(with_path(&path, e));
        }
        Ok(())
    }

    /// The file `name` here, opened to write from its start (made private
    /// when new, emptied when there): for a log written as it comes.
    /// Refused when `name` is a link, a FIFO, a folder or a device; the
    /// open never waits (a FIFO planted between the check and the open).
    pub fn create_file(&self, name: &str) -> io::Result<File> {
        let path = join_name(&self.path, name)?;
        self.check_replaceable(name)?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::WRONLY
                | OFlags::CREATE
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::NOCTTY
                | OFlags::CLOEXEC,
            Mode::from_raw_mode(PRIVATE_FILE),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP => refused(&path, "is a symbolic link"),
            e => with_path(&path, e.into()),
        })?;
        let file = regular(File::from(fd), &path)?;
        rustix::fs::fchmod(file.as_fd(), Mode::from_raw_mode(PRIVATE_FILE))
            .map_err(|e| with_path(&path, e.into()))?;
        file.set_len(0).map_err(|e| with_path(&path, e))?;
        Ok(file)
    }

    /// The regular file `name` here, opened to read; a link, a FIFO or a
    /// device is refused, and the open never waits.
    pub fn open_file(&self, name: &str) -> io::Result<File> {
        let path = join_name(&self.path, name)?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::LOOP => refused(&path, "is a symbolic link"),
            e => with_path(&path, e.into()),
        })?;
        regular(File::from(fd), &path)
    }
}

/// The folder `name` in the folder `dir`, opened to be written in (with
/// `flags` added: `NOFOLLOW`); one the person may pass through but not
/// read (0711, as some homes are) is opened as a path alone, where Linux
/// has them.
fn open_dir_at(dir: &OwnedFd, name: &str, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let base = OFlags::DIRECTORY | OFlags::CLOEXEC | flags;
    match rustix::fs::openat(dir, name, base | OFlags::RDONLY, Mode::empty()) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        Err(rustix::io::Errno::ACCESS) => {
            rustix::fs::openat(dir, name, base | OFlags::PATH, Mode::empty())
        }
        other => other,
    }
}

/// The regular file at `path`, opened to read: refused when its last step
/// is a link, or it is a FIFO or a device; the open never waits. For a
/// file a view reads from a session folder by a path it already holds.
pub fn open_no_link(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                refused(path, "is a symbolic link")
            } else {
                with_path(path, e)
            }
        })?;
    regular(file, path)
}

/// The file itself, when it is a regular one.
fn regular(file: File, path: &Path) -> io::Result<File> {
    let meta = file.metadata().map_err(|e| with_path(path, e))?;
    if meta.is_file() {
        Ok(file)
    } else {
        use std::os::unix::fs::MetadataExt;
        Err(refused(
            path,
            &format!(
                "is {}, not a regular file",
                kind_words(FileType::from_raw_mode(meta.mode()))
            ),
        ))
    }
}

fn kind_words(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a file",
        FileType::Directory => "a folder",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a named pipe (FIFO)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Unknown => "of an unknown kind",
    }
}

fn with_path(path: &Path, e: io::Error) -> io::Error {
    if e.to_string().contains(&path.display().to_string()) {
        return e;
    }
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// Make `path` and its missing parents, each new one private (0700,
/// whatever the umask), as [`Folder::create`] walks it (no link another
/// user owns followed). Folders already there keep their modes.
pub fn make_private_dirs(path: &Path) -> io::Result<()> {
    Folder::create(path).map(|_| ())
}

/// Write `bytes` to `rel` below the folder `root` (made private, as are
/// the folders on the way, when missing), with `mode`: no step follows a
/// link; `rel` is refused when it goes up or is absolute.
pub fn write_inside(root: &Path, rel: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let parts = relative_parts(rel)?;
    let (name, dirs) = parts
        .split_last()
        .ok_or_else(|| bad_relative(rel, "no name"))?;
    let mut here = Folder::create(root)?;
    for d in dirs {
        here = here.sub(d, true)?;
    }
    here.write(name, bytes, mode)
}

/// Read the regular file at `rel` below the folder `root`, at most `cap`
/// bytes (None: all of it); no step follows a link, and `rel` is refused
/// when it goes up or is absolute.
pub fn read_inside(root: &Path, rel: &Path, cap: Option<u64>) -> io::Result<Vec<u8>> {
    let parts = relative_parts(rel)?;
    let (name, dirs) = parts
        .split_last()
        .ok_or_else(|| bad_relative(rel, "no name"))?;
    let mut here = Folder::open(root)?;
    for d in dirs {
        here = here.sub(d, false)?;
    }
    let file = here.open_file(name)?;
    let mut out = Vec::new();
    match cap {
        Some(cap) => file.take(cap).read_to_end(&mut out)?,
        None => (&file).read_to_end(&mut out)?,
    };
    Ok(out)
}

/// Write `bytes` to the file at `path` a person named, with `mode`: the
/// folders they named are theirs (made private when missing, and a link
/// among them followed), but the file itself is refused when it is a
/// link, a FIFO or a device, and is written whole and renamed into place.
pub fn write_named(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| bad_relative(path, "no file name"))?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = Folder::create(parent.unwrap_or(Path::new(".")))?;
    folder.write(name, bytes, mode)
}

#[cfg(test)]
mod tests;
