use std::os::unix::fs::{PermissionsExt, symlink};

use super::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

fn fifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        FileType::Fifo,
        Mode::from_raw_mode(0o666),
        0,
    )
    .unwrap();
}

#[test]
fn names_that_are_paths_are_no_file_names() {
    let d = Path::new("/out");
    assert_eq!(
        join_name(d, "test_f.py").unwrap(),
        Path::new("/out/test_f.py")
    );
    for bad in ["", ".", "..", "../x", "a/b", "/etc/passwd", "x\0y"] {
        let e = join_name(d, bad).unwrap_err();
        assert!(e.to_string().starts_with("not a file name"), "{bad}: {e}");
    }
    assert!(relative_parts(Path::new("pictures/x.png")).is_ok());
    for bad in ["../x", "/etc/hostname", "pictures/../../x", ""] {
        assert!(relative_parts(Path::new(bad)).is_err(), "{bad}");
    }
}

#[test]
fn a_folder_planted_as_a_link_is_refused_and_nothing_is_written_through_it() {
    let root = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    symlink(victim.path(), root.path().join("logs")).unwrap();
    let e = write_inside(root.path(), Path::new("logs/run-1.log"), b"x", PRIVATE_FILE).unwrap_err();
    assert!(
        e.to_string().contains("is a symbolic link, not a folder"),
        "{e}"
    );
    assert!(e.to_string().contains("remove it"), "{e}");
    let e = Folder::open(root.path())
        .unwrap()
        .sub("logs", true)
        .unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
}

#[test]
fn a_file_planted_as_a_link_or_a_fifo_is_neither_followed_nor_replaced_nor_waited_on() {
    let root = tempfile::tempdir().unwrap();
    let secret = root.path().join("secret");
    std::fs::write(&secret, "mine").unwrap();
    let out = root.path().join("out");
    std::fs::create_dir(&out).unwrap();
    symlink(&secret, out.join("report.md")).unwrap();
    fifo(&out.join("program.py"));
    let folder = Folder::open(&out).unwrap();
    for name in ["report.md", "program.py"] {
        let e = folder.write(name, b"payload", PRIVATE_FILE).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = folder.create_file(name).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = folder.open_file(name).unwrap_err();
        assert!(
            e.to_string().contains("symbolic link") || e.to_string().contains("FIFO"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "mine");
    assert!(
        std::fs::symlink_metadata(out.join("report.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // Nothing half-written is left beside them.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 2);
    let e = write_named(&out.join("report.md"), b"x", 0o644).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
}

#[test]
fn a_read_inside_follows_no_link_out_of_the_folder() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("pictures")).unwrap();
    std::fs::write(root.path().join("pictures/a.png"), b"png").unwrap();
    symlink("/etc/hostname", root.path().join("pictures/b.png")).unwrap();
    assert_eq!(
        read_inside(root.path(), Path::new("pictures/a.png"), None).unwrap(),
        b"png"
    );
    assert_eq!(
        read_inside(root.path(), Path::new("pictures/a.png"), Some(2)).unwrap(),
        b"pn"
    );
    let e = read_inside(root.path(), Path::new("pictures/b.png"), None).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    for bad in ["/etc/hostname", "../x", "pictures/../../etc/hostname"] {
        assert!(
            read_inside(root.path(), Path::new(bad), None).is_err(),
            "{bad}"
        );
    }
    let other = tempfile::tempdir().unwrap();
    symlink(root.path().join("pictures"), other.path().join("pictures")).unwrap();
    assert!(read_inside(other.path(), Path::new("pictures/a.png"), None).is_err());
}

#[test]
fn what_is_made_is_private_whatever_the_umask() {
    for umask in [0o000, 0o022, 0o077] {
        let old = rustix::process::umask(Mode::from_raw_mode(umask));
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("s/e");
        write_inside(&dir, Path::new("logs/run-1.log"), b"x", PRIVATE_FILE).unwrap();
        Folder::open(&dir)
            .unwrap()
            .sub("out", true)
            .unwrap()
            .create_file("report.md")
            .unwrap();
        write_named(&dir.join("page.html"), b"x", 0o644).unwrap();
        rustix::process::umask(old);
        assert_eq!(mode(&root.path().join("s")), 0o700, "umask {umask:o}");
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("logs")), 0o700);
        assert_eq!(mode(&dir.join("logs/run-1.log")), 0o600);
        assert_eq!(mode(&dir.join("out/report.md")), 0o600);
        assert_eq!(
            mode(&dir.join("page.html")),
            0o644,
            "a mode asked for is kept"
        );
    }
}

#[test]
fn a_file_written_again_is_replaced_whole_and_keeps_private() {
    let root = tempfile::tempdir().unwrap();
    let f = Folder::create(root.path()).unwrap();
    f.write("a.txt", b"first, longer", 0o644).unwrap();
    f.write("a.txt", b"second", PRIVATE_FILE).unwrap();
    assert_eq!(std::fs::read(root.path().join("a.txt")).unwrap(), b"second");
    assert_eq!(mode(&root.path().join("a.txt")), 0o600);
    let mut log = f.create_file("a.txt").unwrap();
    log.write_all(b"3").unwrap();
    assert_eq!(std::fs::read(root.path().join("a.txt")).unwrap(), b"3");
}

#[test]
fn create_makes_each_missing_folder_private_and_goes_through_the_persons_own_links() {
    let root = tempfile::tempdir().unwrap();
    let old = rustix::process::umask(Mode::from_raw_mode(0));
    let made = Folder::create(&root.path().join("a/b/c"));
    rustix::process::umask(old);
    let made = made.unwrap();
    assert_eq!(made.path(), root.path().join("a/b/c"));
    for d in ["a", "a/b", "a/b/c"] {
        assert_eq!(mode(&root.path().join(d)), 0o700, "{d}");
    }
    made.write("x", b"x", PRIVATE_FILE).unwrap();
    assert!(root.path().join("a/b/c/x").is_file());
    // A link of the person's own on the way is theirs, and followed.
    symlink(root.path().join("a"), root.path().join("mine")).unwrap();
    Folder::create(&root.path().join("mine/b/d")).unwrap();
    assert!(root.path().join("a/b/d").is_dir());
    // `..` and a relative path are walked as the kernel would.
    Folder::create(&root.path().join("a/b/../e")).unwrap();
    assert!(root.path().join("a/e").is_dir());
    // A file where a folder should be is refused.
    let e = Folder::create(&root.path().join("a/b/c/x/y")).unwrap_err();
    assert!(e.to_string().contains("is a file, not a folder"), "{e}");
}

#[test]
fn create_follows_no_link_another_user_owns() {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: giving a link to another user needs root");
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let planted = root.path().join("planted");
    symlink(&target, &planted).unwrap();
    rustix::fs::chownat(
        rustix::fs::CWD,
        &planted,
        Some(rustix::fs::Uid::from_raw(65534)),
        Some(rustix::fs::Gid::from_raw(65534)),
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    for path in [planted.join("man/man1"), planted.clone()] {
        let e = Folder::create(&path).unwrap_err();
        assert!(
            e.to_string()
                .contains("is a symbolic link another user (uid 65534) owns, not followed"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    // Root's own links are followed (a system's /usr/local/share/man may be one).
    rustix::fs::chownat(
        rustix::fs::CWD,
        &planted,
        Some(rustix::fs::Uid::from_raw(0)),
        Some(rustix::fs::Gid::from_raw(0)),
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    Folder::create(&planted.join("man")).unwrap();
    assert!(target.join("man").is_dir());
}
