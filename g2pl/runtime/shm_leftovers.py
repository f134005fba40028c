"""Shared-memory segments a killed MPI job leaves behind, removed after it ends.

MPI libraries put the ranks' on-node channels in files under /dev/shm and remove
them once every rank has attached, or when the ranks finalize.  A job whose
ranks are killed first (a failing rank, `--time-limit`, Ctrl-C) leaves them
there, and /dev/shm is memory: after a few hundred such jobs gigabytes of it
are gone, and the next large graph is refused for want of memory.  The
supervisor notes the segments present before it starts a job and, after the
job, removes the new ones that no process of this user still has open or
mapped.  Another job's live segments are open or mapped by its ranks, so they
stay; files of other users or of other names are never touched.
"""

from __future__ import annotations

import os
from pathlib import Path

SHM_DIR = Path("/dev/shm")

#: the name prefixes of MPI libraries' segments: MPICH's, Open MPI's (shared-memory BTL, UCX)
PREFIXES = ("mpich_shm_", "vader_segment.", "sm_segment.", "ucx_shm_posix_")


def segments(where: Path = SHM_DIR) -> set[str]:
    """The names of this user's MPI segment files in `where` (empty where there is no such folder)."""
    try:
        entries = list(os.scandir(where))
    except OSError:
        return set()
    uid = os.getuid()
    out = set()
    for e in entries:
        if not e.name.startswith(PREFIXES):
            continue
        try:
            if e.is_file(follow_symlinks=False) and e.stat(follow_symlinks=False).st_uid == uid:
                out.add(e.name)
        except OSError:
            continue
    return out


def in_use(paths: set[str]) -> set[str]:
    """Which of `paths` some process of this user has open or mapped (from /proc)."""
    found: set[str] = set()
    uid = os.getuid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        proc = Path("/proc", pid)
        try:
            if proc.stat().st_uid != uid:
                continue
            maps = (proc / "maps").read_text(errors="replace")
            found |= {p for p in paths if p in maps}
            for fd in os.listdir(proc / "fd"):
                try:
                    target = os.readlink(proc / "fd" / fd)
                except OSError:
                    continue
                if target in paths:
                    found.add(target)
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def remove_leftovers(before: set[str], where: Path = SHM_DIR) -> list[str]:
    """Remove this user's MPI segments in `where` that were not there (`before`, from `segments`) and
    that no process of this user has open or mapped; returns the names removed."""
    new = segments(where) - before
    if not new:
        return []
    paths = {str(where / name) for name in new}
    removed = []
    for path in sorted(paths - in_use(paths)):
        try:
            os.unlink(path)
        except OSError:
            continue
        removed.append(os.path.basename(path))
    return removed
