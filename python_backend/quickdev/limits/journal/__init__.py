"""The file journal: a quick-dev job leaves the user's files exactly as it found them.

While a job runs, every file it creates, changes, renames or deletes outside its run
directory is journaled; when the job ends, however it ends, the tree is put back and
the job's versions are kept in ``RUN_DIR/outputs`` (listed in result.json ``outputs``).

Back up first, not redirect. An audit hook (``hook``) sees each operation before it
happens but cannot change its arguments, so redirecting would mean replacing every
function that takes a path, and would still miss readers in native code (torch's
C++ reader, safetensors' mmap) and anything the job hands a path to. Backing up
first lets every write land where the script asked: the job reads its own writes by
construction, native readers included. The cost is that the user's tree holds the
job's versions while it runs, so the journal is durable: its log (``records``)
reaches the disk before each change, and the next quickdev command or language
server finishes the restore of a job that was killed (``recover``).

The backup of a file that is replaced (``open(p, "w")``, ``torch.save(p)``, an
atomic ``os.replace``) or removed is a rename or a hard link: a multi-GB checkpoint
costs no copy. Only a file opened to change in place (``"a"``, ``"r+"``) is copied,
as a reflink where the file system can clone (``backup``).

Every process of the job, every writer: the C library's file calls of the job and of
everything it starts (Python, torch's C++ writers, SQLite, HDF5, OpenCV, ``cp``, a shell's
``>>``) are interposed (``interpose.c``) and asked of one journal process (``service``),
which keeps each path's original once, whichever process changes it first. Where the
interposer cannot be built or loaded, the Python-level journal stands in (``hook``,
``registry``, ``children``).

Modules: ``session`` (one job's journal, start to end), ``scope`` (which paths count),
``records`` (the log), ``backup`` (putting originals aside, on any file system),
``journal`` (first touch of each path), ``claims`` (two jobs, one folder),
``interpose.c``, ``interposer``, ``service`` and ``process`` (every process's file calls:
the library, the journal process, the job's side of it), ``hook``
(the audit hook), ``registry`` and ``native`` (libraries that write from native code),
``edits`` (the person's own edits win), ``manifest`` (the safety net: changes no journal
saw are named), ``restore`` (putting it back), ``recover`` (after a kill), ``loggers``
(logger stores pointed into the run directory), ``children`` (Python child processes),
``safety`` (what result.json says of it all).

Importing this package imports none of them: the language server (``recover``) and the
journal process (``service``) load only what they use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the journal process starts without importing it
if TYPE_CHECKING:
    from quickdev.limits.journal.session import LATE_THREAD_GRACE_S, JournalSession, install

__all__ = ["LATE_THREAD_GRACE_S", "JournalSession", "install"]


def __getattr__(name: str) -> object:
    if name in __all__:
        from quickdev.limits.journal import session

        return getattr(session, name)
    raise AttributeError(name)
