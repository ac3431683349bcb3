"""What identifies a model directory's contents without reading them: the metadata of every
entry below it, for the cache of collected models (triton_doctor.cache).

Each file's name, size, inode, mtime and ctime (nanoseconds), and each directory's name, go
into the fingerprint. An edit changes the ctime, and a file replaced by a rename changes the
inode, even where a tool restores the mtime (``cp -p``, ``rsync -t``). A directory holding a
symbolic link, a special file or more than MAX_ENTRIES entries, or one that cannot be listed
whole, gets no fingerprint. A link may lead out of the directory, where a change leaves no
trace here, so such a model is read again on every run. Nor does a file system without inode
numbers (Windows lists them as 0, and its ctime is the creation time: an edit that puts the
mtime back would leave no trace). A network file system that caches attributes may show an
edit to ``stat`` a little later than to ``open``.
"""

from __future__ import annotations

import itertools
import os
import stat

#: Past this many entries a model directory is not cached: listing it costs what reading does.
MAX_ENTRIES = 10_000
#: A model whose newest timestamp is this recent is not cached: on file systems with coarse
#: timestamps (FAT keeps 2 s), an edit moments later could leave every stamp the same.
SETTLE_NS = 3_000_000_000


def fingerprint(path: str | os.DirEntry[str], now_ns: int,
                listings: dict[str, list[os.DirEntry[str]]] | None = None) -> str | None:
    """A digest of everything below the model directory ``path`` (or the entry listing it);
    None when the directory cannot be cached (see the module), or changed within SETTLE_NS of
    ``now_ns``. Given ``listings``, it is filled with each directory's entries by path, sorted
    by name, when the walk listed every one (else left empty): the reader of the model, which
    lists the same directories, takes them from there."""
    from triton_doctor.cache import digest

    walked: dict[str, list[os.DirEntry[str]]] = {} if listings is None else listings
    walk = _rows(path, walked)
    if walk is None:
        walked.clear()
        return None
    rows, newest = walk
    if newest > now_ns - SETTLE_NS:
        return None
    return digest(repr(rows))


def _rows(path: str | os.DirEntry[str], walked: dict[str, list[os.DirEntry[str]]]
          ) -> tuple[list[tuple], int] | None:
    """Each file's (relative name, size, inode, device, mtime, ctime) and each directory's
    (relative name with a slash), in the order of a walk over listings sorted by name, and the
    newest of the files' times (0 for none); None when the directory cannot be cached. A
    directory needs no ``stat``: what is in it is its rows, and its own times change only with
    them (an entry's listing tells it is a directory, not a link to one). Each listing goes
    into ``walked``."""
    try:
        if not (path.is_dir(follow_symlinks=False) if isinstance(path, os.DirEntry)
                else stat.S_ISDIR(os.lstat(path).st_mode)):
            return None
    except OSError:
        return None
    rows: list[tuple] = []
    newest = 0
    pending = [("", os.fspath(path))]
    while pending:
        prefix, directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(itertools.islice(listing, MAX_ENTRIES + 1))
            if len(entries) > MAX_ENTRIES:
                return None
            walked[directory] = entries = sorted(entries, key=_name)
            for entry in entries:  # the entry's type is known from the listing
                name = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    rows.append((f"{name}/",))
                    pending.append((f"{name}/", entry.path))
                    continue
                status = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(status.st_mode) or not status.st_ino:
                    return None
                rows.append((name, status.st_size, status.st_ino, status.st_dev,
                             status.st_mtime_ns, status.st_ctime_ns))
                newest = max(newest, status.st_mtime_ns, status.st_ctime_ns)
            if len(rows) > MAX_ENTRIES:
                return None
        except OSError:
            return None
    return rows, newest


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name
