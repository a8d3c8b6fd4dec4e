"""Request-scoped dependencies, declared once.

The two that read the request body are ``async`` (reading it is waiting, not work);
everything that touches the store is a plain function, which FastAPI runs in its
threadpool, so that no database call blocks the event loop.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session
from starlette.datastructures import FormData

from kernelindex.accounts.csrf import check_csrf
from kernelindex.web.params import form_text


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessions() as session:
        yield session


async def checked_form(request: Request) -> FormData:
    """The submitted form, once its CSRF token is this session's (else 403, before anything is read)
    and its text is free of control characters (else 400: ``params.form_text``)."""
    form = await request.form()
    check_csrf(request, form)
    return form_text(form)


async def raw_body(request: Request) -> bytes:
    return await request.body()


SessionDep = Annotated[Session, Depends(get_session)]
CheckedForm = Annotated[FormData, Depends(checked_form)]
RawBody = Annotated[bytes, Depends(raw_body)]


def client_address(request: Request) -> str:
    """The address rate limits count by (the peer of the connection)."""
    return request.client.host if request.client else "unknown"
