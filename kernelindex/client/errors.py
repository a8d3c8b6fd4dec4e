"""What the client raises: a refusal carries the registry's RFC 9457 problem body, typed and whole."""

from __future__ import annotations

from typing import Any

from kernelindex.web.api import Problem


class ClientError(Exception):
    """Anything that kept the client from an answer."""


class NetworkError(ClientError):
    """The registry could not be reached, or did not answer in time, after every retry."""


class UnexpectedResponse(ClientError):
    """The registry answered something that is not what its API serves (not JSON, or another shape)."""


class ProblemError(ClientError):
    """The registry refused the request (4xx/5xx): ``problem`` is its RFC 9457 body as the API
    documents it, ``body`` the whole body (members such as ``check`` a route adds included)."""

    def __init__(self, status: int, problem: Problem, body: dict[str, Any], url: str):
        super().__init__(f"{problem.title} ({status}): {problem.detail}")
        self.status = status
        self.problem = problem
        self.body = body
        self.url = url


class BadRequestError(ProblemError):
    """400 (or 422): the input cannot be used; ``problem.detail`` says why."""


class AuthError(ProblemError):
    """401 or 403: no key, or a key that may not do this."""


class NotFoundError(ProblemError):
    """404: no record has that name."""


class RateLimitedError(ProblemError):
    """429, still, after the retries."""


class ServerError(ProblemError):
    """5xx, still, after the retries."""


def problem_error(status: int, body: dict[str, Any], url: str) -> ProblemError:
    """The typed exception for ``status``; a body missing members is completed from the status."""
    problem = Problem(
        type=str(body.get("type") or "about:blank"),
        title=str(body.get("title") or f"HTTP {status}"),
        status=int(body.get("status") or status) if str(body.get("status", "")).isdigit() else status,
        detail=str(body.get("detail") or ""),
    )
    kind: type[ProblemError] = ProblemError
    if status in (400, 422):
        kind = BadRequestError
    elif status in (401, 403):
        kind = AuthError
    elif status == 404:
        kind = NotFoundError
    elif status == 429:
        kind = RateLimitedError
    elif status >= 500:
        kind = ServerError
    return kind(status, problem, body, url)
