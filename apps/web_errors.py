"""The error of the web app (:mod:`treppen.apps.web`): a request the server refuses, answered as JSON."""

from __future__ import annotations

from starlette.exceptions import HTTPException


class BadRequest(HTTPException):
    """A request the server refuses (400 unless said otherwise); ``detail`` says why."""

    def __init__(self, detail: str, status_code: int = 400):
        super().__init__(status_code=status_code, detail=detail)
