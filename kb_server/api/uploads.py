"""Uploaded files, stored durably under a content-hash name inside the store's uploads dir.

The client's file name picks the suffix (md, pdf, html; yaml for accelerator facts) and is kept as the
document's name (display_name: shown in hits, listings and errors); it never becomes part of a path, so
a name like `../../etc/passwd` or a symlink cannot move the write outside `home/uploads`. A file is
written to a temporary name, fsynced, renamed to `<sha256><suffix>`, and the directory fsynced:
a crash leaves either nothing or a complete file, and start-up sweeps temporaries and orphans.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from kb_server.api.errors import Problem

SUFFIXES = {".md": ".md", ".markdown": ".md", ".pdf": ".pdf", ".html": ".html", ".htm": ".html", ".txt": ".txt",
            ".yaml": ".yaml", ".yml": ".yaml"}
NAME_MAX = 200  # characters of a kept file name
NO_TEXT = "holds no text to index (it is empty); nothing was stored"
TMP_PREFIX = ".tmp-"
_CHUNK = 1 << 20


def uploads_dir(home: Path) -> Path:
    """home/uploads, created if missing; refuses a symlinked or escaping directory."""
    home = home.resolve()
    path = home / "uploads"
    if path.is_symlink():
        raise Problem(503, f"{path} is a symlink; the uploads dir must be a real directory inside {home}")
    path.mkdir(parents=True, exist_ok=True)
    if path.resolve().parent != home:
        raise Problem(503, f"{path} resolves outside {home}")
    return path


def display_name(filename: str | None, suffix: str) -> str:
    """The upload's own name as shown: a relative path without '.', '..' or control characters."""
    parts = [p for p in (filename or "").replace("\\", "/").split("/") if p not in ("", ".", "..")]
    name = "".join(c for c in "/".join(parts) if c.isprintable())[-NAME_MAX:].lstrip("/")
    return name or f"upload{suffix}"


def suffix_of(filename: str | None) -> str:
    """The stored suffix for an uploaded name; 415 naming the file when it is not md, pdf or html."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    suffix = Path(base).suffix.lower()
    if suffix not in SUFFIXES:
        raise Problem(415, f"file {base!r}: only {', '.join(sorted(SUFFIXES))} files are accepted (documents, "
                      "and accelerator facts in yaml)", field="file")
    return SUFFIXES[suffix]


def check_content(data_head: bytes, suffix: str, name: str) -> None:
    """Cheap checks that the bytes are what the suffix says, so parsers see plausible input."""
    if suffix == ".pdf" and not data_head.startswith(b"%PDF-"):
        raise Problem(422, f"file {name!r} has a .pdf name but does not start with %PDF-", field="file")
    if suffix in (".md", ".html", ".txt", ".yaml"):
        try:
            data_head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(data_head) - 4:  # not just a character cut at the end of the head
                raise Problem(422, f"file {name!r} is not UTF-8 text (byte {exc.start})", field="file") from exc


def save(src: BinaryIO, directory: Path, suffix: str, max_bytes: int, name: str = "the file") -> tuple[Path, str, int]:
    """Copy `src` into `directory` as <sha256><suffix>; returns (path, sha256, size). Durable on return."""
    tmp = directory / f"{TMP_PREFIX}{uuid.uuid4().hex}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o600)
    digest, size = hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            while block := src.read(_CHUNK):
                size += len(block)
                if size > max_bytes:
                    raise Problem(413, f"the file is over the upload limit of {max_bytes} bytes", field="file")
                digest.update(block)
                out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if size == 0:
            raise Problem(422, f"{name}: {NO_TEXT}", field="file")
        final = directory / f"{digest.hexdigest()}{suffix}"
        os.replace(tmp, final)
        _fsync_dir(directory)
        return final, digest.hexdigest(), size
    finally:
        tmp.unlink(missing_ok=True)


def discard_unreferenced(path: Path, sources: set[str], directory: Path) -> bool:
    """Remove a stored upload (a file directly inside `directory`) that no document was read from
    (`sources`: the registry's sources); never a file elsewhere, which is a user's own. True if removed."""
    if path.parent.resolve() != directory.resolve() or path.name.startswith(TMP_PREFIX) or str(path) in sources:
        return False
    path.unlink(missing_ok=True)
    return True


def sweep(directory: Path, keep_names: set[str], on_orphan: Callable[[Path], None]) -> list[Path]:
    """Remove temporaries of interrupted uploads, and files no document refers to (`keep_names`: the files
    the store's documents were read from), after `on_orphan(path)` has removed whatever the store holds of
    them; returns what went."""
    removed = []
    for path in sorted(directory.iterdir()):
        if path.is_symlink() or path.name.startswith(TMP_PREFIX) or not path.is_file():
            pass
        elif path.name in keep_names:
            continue
        else:
            on_orphan(path)
        if path.is_dir() and not path.is_symlink():
            continue  # nothing of ours makes directories here; leave it for a person to look at
        path.unlink(missing_ok=True)
        removed.append(path)
    if removed:
        _fsync_dir(directory)
    return removed


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
