"""Where the benches find real code, and how they list a corpus's source files.

A corpus is a folder, or an archive read without unpacking (a ``.zip`` such as the JDK's
``src.zip``, an npm ``.tgz``). Nothing here was written by this project: the defaults
are where Debian's packages and the running interpreter put their sources.
"""

from __future__ import annotations

import functools
import sysconfig
import tarfile
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

Reader = Callable[[], bytes]
"""Reads one file of a corpus when called (a large corpus is listed, not loaded)."""

HEADER_SUFFIXES = (".h", ".tcc", ".hpp", ".cc")
"""Source files of a corpus listed with no extensions: the C++ library's headers, most of
which have no suffix at all."""

SOURCES: Mapping[str, tuple[str, ...]] = {
    # Where Debian's packages put each language's sources; the first that exists is used.
    "go": ("/usr/share/go-1.19/src", "/usr/lib/go-1.19/src", "/usr/share/go/src",
           "/usr/lib/go/src"),
    "java": ("/usr/lib/jvm/openjdk-17/lib/src.zip",
             "/usr/lib/jvm/java-17-openjdk-amd64/lib/src.zip"),
    "cpp": ("/usr/include/c++/12",),
    "rust": ("/usr/lib/rustlib/src/rust/library",),
}


def default_corpus() -> Path:
    """The running interpreter's standard library."""
    return Path(sysconfig.get_paths()["stdlib"])


SPLITS = ("tune", "report")
"""The two halves of ``scripts/fresh-corpus.sh DIR``: rules are tuned on ``tune``,
figures are reported on ``report`` (code nobody tuned on)."""


def split_corpora(corpus: Path | None, split: str) -> list[tuple[str, Path]]:
    """(package, folder) of each package of ``DIR/<split>``, sorted by name; ValueError
    with what to run when the folder is not there."""
    if split not in SPLITS:
        raise ValueError(f"--split must be one of {', '.join(SPLITS)}, not {split!r}")
    if corpus is None:
        raise ValueError("--split needs --corpus DIR, the folder made by "
                         "scripts/fresh-corpus.sh DIR")
    folder = corpus / split
    packages = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    if not packages:
        raise ValueError(f"{folder} has no package folders: run scripts/fresh-corpus.sh "
                         f"{corpus} first")
    return [(p.name, p) for p in packages]


def python_files(corpus: Path, min_bytes: int, max_bytes: int,
                 skip: Callable[[Path], bool]) -> list[Path]:
    """The corpus's ``.py`` files strictly between the two sizes, sorted (a seeded
    shuffle then gives the same files on every machine with the same corpus)."""
    return sorted(p for p in corpus.rglob("*.py")
                  if not skip(p) and min_bytes < p.stat().st_size < max_bytes)


def is_source(name: str, extensions: tuple[str, ...]) -> bool:
    """A file with one of ``extensions``; with none, a C++ header."""
    base = name.rsplit("/", 1)[-1]
    if extensions:
        return base.endswith(extensions)
    return "." not in base or base.endswith(HEADER_SUFFIXES)


def archive_files(path: Path, extensions: tuple[str, ...], max_bytes: int
                  ) -> list[tuple[str, Reader]]:
    """(name inside, reader) of a ``.zip``'s or a tar archive's source files, in the
    archive's order; a tar archive is read at once (it cannot be read by member later)."""
    if path.suffix == ".zip":
        archive = zipfile.ZipFile(path)
        return [(info.filename, functools.partial(archive.read, info))
                for info in archive.infolist()
                if is_source(info.filename, extensions) and info.file_size <= max_bytes]
    out: list[tuple[str, Reader]] = []
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if member.isfile() and is_source(member.name, extensions) \
                    and member.size <= max_bytes:
                data = tar.extractfile(member)
                if data is not None:
                    out.append((member.name, functools.partial(bytes, data.read())))
    return out


def folder_files(root: Path, extensions: tuple[str, ...], max_bytes: int
                 ) -> list[tuple[Path, Reader]]:
    """(path, reader) of a folder's source files, at any depth, sorted by path."""
    return [(path, path.read_bytes) for path in sorted(root.rglob("*"))
            if is_source(path.name, extensions) and path.is_file()
            and path.stat().st_size <= max_bytes]
