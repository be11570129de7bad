"""Ctrl-C (SIGINT) and SIGTERM in the long commands (``treppen train``, ``tournament``, ``label``): what is
done is kept, and the command ends with one line and the status a shell gives a process that a signal
ended (130 for SIGINT, 143 for SIGTERM).

- :func:`interrupts_raise`: while a command runs, both signals raise :class:`Interrupted` (a
  ``KeyboardInterrupt``) in the main thread; SIGTERM would otherwise end the process at once, with
  nothing saved. A signal that lands in a finalizer (a ``__del__``, whose exceptions Python only
  reports, as llvmlite's do while numba compiles) is delivered again after it, so no signal is lost.
- :func:`stop_requests`: where a checkpoint is whole only between steps (the batched learner's
  updates), the first signal asks the loop to stop at the next such point (:class:`StopRequest`);
  a second one raises at once.
- :func:`handlers_kept`: around a call that sets its own handlers (``ray.init`` sets one for SIGTERM
  that ends the process at once, or aborts it), the handlers before are set again after it.
- :func:`ignore_interrupts`: in a worker process, which its parent stops (a terminal sends Ctrl-C to
  the whole process group, and a worker's own ``KeyboardInterrupt`` would only add a traceback and
  break the parent's save).
- :func:`spawn_context` and :func:`interrupts_held`: a worker starts with both signals blocked, so
  that one sent while it is still starting (importing, before it can call :func:`ignore_interrupts`)
  waits and is then dropped, instead of ending the worker with a traceback; in the parent a signal
  waits until the start (or the hand-over of work to a pool) is done.
"""

from __future__ import annotations

import _thread
import contextlib
import multiprocessing
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: The signals that stop a command, in the order of their exit statuses.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A command stopped by ``signum`` (SIGINT or SIGTERM); :attr:`status` is its exit status."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def status(self) -> int:
        """128 + the signal's number, as a shell reports a process that the signal ended (130, 143)."""
        return 128 + self.signum


#: The signal :func:`interrupts_raise` received last, or None: a library that catches the
#: :class:`Interrupted` and raises a plain ``KeyboardInterrupt`` of its own (Ray's ``ray.wait`` and
#: ``ray.get`` do) loses which signal it was.
_received: int | None = None


def exit_status(err: KeyboardInterrupt) -> int:
    """The exit status of a command that ``err`` stopped: :attr:`Interrupted.status`, else that of
    the signal :func:`interrupts_raise` received last, else 130 (Ctrl-C)."""
    if isinstance(err, Interrupted):
        return err.status
    return 128 + (_received or signal.SIGINT)


def _raise(signum: int, _frame: Any) -> None:
    global _received
    _received = signum
    raise Interrupted(signum)


@contextlib.contextmanager
def _handlers(handler: Any) -> Iterator[None]:
    """``handler`` for :data:`SIGNALS` while the block runs (only the main thread sets handlers:
    elsewhere nothing changes), then the handlers before."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, old in before.items():
            signal.signal(s, old)


@contextlib.contextmanager
def handlers_kept() -> Iterator[None]:
    """The handlers of :data:`SIGNALS` before the block are set again after it, whatever it set (in the
    main thread; a handler that Python did not set, which it cannot set again, is left as the block left it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        yield
    finally:
        for s, old in before.items():
            if old is not None:
                signal.signal(s, old)


@contextlib.contextmanager
def _redelivered() -> Iterator[None]:
    """While the block runs in the main thread, an :class:`Interrupted` that Python could only report
    (raised in a finalizer: :func:`sys.unraisablehook`) is raised again in the main thread, as its
    signal would be, once the finalizer is done; other such exceptions are reported as before.

    A courier thread delivers it (:func:`_thread.interrupt_main`): in the main thread the handler
    would run at once, still inside the finalizer."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = sys.unraisablehook
    lost: queue.SimpleQueue[int | None] = queue.SimpleQueue()  # put() never runs a signal handler

    def deliver() -> None:
        while (signum := lost.get()) is not None:
            _thread.interrupt_main(signal.Signals(signum))

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Interrupted):
            lost.put(unraisable.exc_value.signum)
        else:
            before(unraisable)

    threading.Thread(target=deliver, name="interrupts-redelivered", daemon=True).start()
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = before
        lost.put(None)


@contextlib.contextmanager
def interrupts_raise() -> Iterator[None]:
    """While the block runs, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread (also
    when the signal lands in a finalizer: :func:`_redelivered`)."""
    global _received
    _received = None
    with _handlers(_raise), _redelivered():
        yield


class StopRequest:
    """The signal that asked a loop to stop at its next whole point (:func:`stop_requests`), or None."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __bool__(self) -> bool:
        return self.signum is not None

    def handle(self, signum: int, _frame: Any) -> None:
        if self.signum is not None:  # a second signal: stop at once
            raise Interrupted(signum)
        self.signum = signum

    def stop(self) -> Interrupted:
        """The exception that ends the command as the signal asked."""
        assert self.signum is not None
        return Interrupted(self.signum)


@contextlib.contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """While the block runs, the first SIGINT or SIGTERM only sets the yielded :class:`StopRequest`
    (the loop stops at its next whole point); a second raises :class:`Interrupted` at once."""
    request = StopRequest()
    with _handlers(request.handle), _redelivered():
        yield request


def ignore_interrupts() -> None:
    """In a worker process (one started by :mod:`multiprocessing`): ignore SIGINT and SIGTERM (its
    parent stops it, and it ends with its parent, :func:`treppen.arena.watchdog.watch_parent`), also
    one that arrived while it started under :func:`interrupts_held` (dropped, then unblocked); in a
    main process, nothing."""
    if multiprocessing.parent_process() is None:
        return
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait while the block runs (it starts processes, or hands work to a pool that
    may start them), then are handled as before it: in the calling thread they are blocked, so a
    process started here starts with both blocked (a process inherits its parent's signal mask,
    across ``exec`` too) until :func:`ignore_interrupts` drops and unblocks them; in the main thread
    their handlers only note them (a signal that another thread takes is handled by the main one),
    so no exception leaves the block half done (a pool that started a worker it has not yet counted
    would wait for it forever at shutdown). After the block the mask and handlers before are set
    again and a noted signal is raised once more: none is lost."""
    noted: list[int] = []
    try:
        with _handlers(lambda signum, _frame: noted.append(signum)):
            before = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
            try:
                yield
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, before)
    finally:
        if noted:
            signal.raise_signal(noted[0])


class _HeldProcess(multiprocessing.context.SpawnProcess):
    """A spawned process that starts under :func:`interrupts_held`."""

    def start(self) -> None:
        with interrupts_held():
            super().start()


class _HeldSpawnContext(multiprocessing.context.SpawnContext):
    Process = _HeldProcess


def spawn_context() -> multiprocessing.context.SpawnContext:
    """The ``spawn`` context, whose processes start under :func:`interrupts_held` (for
    :class:`~concurrent.futures.ProcessPoolExecutor`'s ``mp_context``, or ``.Process``); each must
    call :func:`ignore_interrupts` first."""
    return _HeldSpawnContext()
