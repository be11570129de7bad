"""The web app's searches under load (:mod:`treppen.apps.web`): wall-clock deadlines and a limiter
with a fair queue per session.

A search agent's move and a hint cost CPU seconds; two cores cannot serve every request at full
budget at once, so the page bounds what a person waits instead of the search's quality:

- every search runs under a wall-clock deadline counted from the request's arrival
  (:data:`MOVE_DEADLINE` for an agent's move, :data:`HINT_DEADLINE` for a hint; the search's
  ``deadline`` setting, :mod:`treppen.agents.search_settings`), so a busy server plays shorter
  searches;
- :class:`Limiter` admits as many searches at once as the machine has cores; the others wait in
  a queue per session, served round robin, so a session asking often cannot starve the others;
- a request that cannot start while :data:`MIN_SEARCH` of its deadline is left is answered at
  once (an agent's move may wait 0.5 s for a slot, a hint 1 s): an agent's move
  is searched at the floor budget (one determinization per searched move, a few milliseconds,
  outside the limiter), a hint is refused with 503 and ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

#: Wall-clock seconds a search agent's move may take at the page, from the request's arrival.
MOVE_DEADLINE = 1.0
#: Wall-clock seconds a hint may take, from the request's arrival.
HINT_DEADLINE = 1.5
#: The least wall time, in seconds, a search that waited for its slot still gets: a request waits
#: for the limiter until only this much of its deadline is left, then is answered without it.
MIN_SEARCH = 0.5
#: ``Retry-After`` of a hint refused for load, in seconds.
RETRY_AFTER = 2


def cores() -> int:
    """The cores this process may run on (the limiter's default size)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        return os.cpu_count() or 1


class Limiter:
    """At most ``slots`` searches at once; waiting requests are served one session at a time, round
    robin (a session's own requests in the order they came).

    For use on one event loop (the server's): :meth:`acquire` waits without holding a thread.

    :param slots: searches at once (default :func:`cores`).
    :raises ValueError: for fewer than 1 slot.
    """

    def __init__(self, slots: int | None = None):
        self.slots = cores() if slots is None else slots
        if self.slots < 1:
            raise ValueError(f"slots={slots!r} must be at least 1")
        self.busy = 0
        #: Waiting requests per session, the session to serve next first.
        self._queues: OrderedDict[Hashable, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def waiting(self) -> int:
        """Requests waiting for a slot."""
        return sum(len(q) for q in self._queues.values())

    async def acquire(self, session: Hashable, wait: float) -> bool:
        """Take a slot for ``session``, waiting at most ``wait`` seconds in its queue.

        :return: whether a slot was taken (then :meth:`release` it).
        """
        if self.busy < self.slots and not self._queues:
            self.busy += 1
            return True
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queues.setdefault(session, deque()).append(turn)
        try:
            await asyncio.wait_for(asyncio.shield(turn), wait)
            return True
        except asyncio.TimeoutError:
            if turn.done():  # granted as the wait ended
                return True
            self._drop(session, turn)
            return False
        except asyncio.CancelledError:  # the client went away
            if turn.done():
                self.release()
            else:
                self._drop(session, turn)
            raise

    def release(self) -> None:
        """Give a slot back: to the oldest request of the next session in turn, if any waits."""
        if not self._queues:
            self.busy -= 1
            return
        session, queue = next(iter(self._queues.items()))
        turn = queue.popleft()
        if queue:
            self._queues.move_to_end(session)  # the other sessions' turn first
        else:
            del self._queues[session]
        turn.set_result(None)  # the slot passes on: busy stays

    async def run(
        self, session: Hashable, ends: float, work: Callable[[float], dict[str, Any]], refuse: bool = False
    ) -> Response:
        """Answer a request by ``work(ends)`` (run in the thread pool) holding a slot of
        ``session``'s; ``ends`` is when the answer is due (``time.monotonic()`` seconds: the
        request's arrival plus its deadline).

        Without a slot while :data:`MIN_SEARCH` of the time is left: 503 with ``Retry-After``
        when ``refuse``, else ``work(0.0)`` at once outside the limiter (a search at its floor budget).
        """
        granted = await self.acquire(session, max(0.0, ends - MIN_SEARCH - time.monotonic()))
        if not granted and refuse:
            busy = f"the server is busy: every search slot is taken; try again in {RETRY_AFTER} s"
            return JSONResponse({"error": busy}, 503, headers={"Retry-After": str(RETRY_AFTER)})
        try:
            return JSONResponse(await run_in_threadpool(work, ends if granted else 0.0))
        finally:
            if granted:
                self.release()

    def _drop(self, session: Hashable, turn: asyncio.Future[None]) -> None:
        queue = self._queues[session]
        queue.remove(turn)
        if not queue:
            del self._queues[session]
