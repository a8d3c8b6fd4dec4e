"""A typed client of a KernelIndex registry's JSON API (``Client``), and what it raises."""

from kernelindex.client.errors import (
    AuthError,
    BadRequestError,
    ClientError,
    NetworkError,
    NotFoundError,
    ProblemError,
    RateLimitedError,
    ServerError,
    UnexpectedResponse,
)
from kernelindex.client.http import CITATION_FORMATS, Client, SubmissionReceipt

__all__ = [
    "CITATION_FORMATS",
    "AuthError",
    "BadRequestError",
    "Client",
    "ClientError",
    "NetworkError",
    "NotFoundError",
    "ProblemError",
    "RateLimitedError",
    "ServerError",
    "SubmissionReceipt",
    "UnexpectedResponse",
]
