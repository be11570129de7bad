"""Worker processes that end with their parent: tournament workers and training env workers.

A worker blocked on its task queue does not notice that its parent was killed (``kill -9``, an
out-of-memory kill): it would live on as an orphan holding its memory. :func:`watch_parent`,
called first thing in a worker, starts a thread that ends the worker once its parent is gone.
"""

from __future__ import annotations

import multiprocessing
import os
import threading


def watch_parent() -> None:
    """In a worker process (one started by :mod:`multiprocessing`), start a daemon thread that ends
    the process (``os._exit(1)``) as soon as its parent has died, even before this call; in a main
    process, nothing (a training run must outlive the shell that started it).

    The thread waits on the parent's sentinel, a pipe that the parent's death closes (the parent of
    record: the process that started the worker, also under the ``forkserver`` start method).
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()
