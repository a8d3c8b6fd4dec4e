"""The ``cursor`` of the API's lists: an opaque token around a keyset position.

A token is base64url of a checksum followed by a JSON payload naming the listing, the
sort, a fingerprint of the filters and the position of the last item served. It is
bound to the query it came from, so it cannot be replayed against another listing,
sort or filter, and an edited or truncated token is refused rather than misread.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from typing import Any

from kernelindex.store.keyset import Position, PositionError, SortKey, position_from_json, position_to_json
from kernelindex.web.errors import BadRequest

MAX_CURSOR_LENGTH = 2048
# The checksum is an HMAC keyed by this constant, which is public (it is in the source):
# it is a checksum against edited or truncated cursors, not protection against forgery.
# Forgery gains nothing: a cursor only names a position in a listing, which anyone can
# reach by paging, and a made-up position is checked against the listing's sort keys
# like any other. (An HMAC rather than a plain hash keeps the tokens already issued valid.)
CHECKSUM_CONTEXT = b"kernelindex/api/v1/cursor"
CHECKSUM_BYTES = 12
CURSOR_CHARACTERS = re.compile(r"^[A-Za-z0-9_-]+$")


def _fingerprint(filters: dict[str, Any]) -> str:
    given = {key: value for key, value in filters.items() if value is not None}
    return hashlib.sha256(json.dumps(given, sort_keys=True).encode()).hexdigest()[:16]


def checksum(payload: bytes) -> bytes:
    return hmac.new(CHECKSUM_CONTEXT, payload, hashlib.sha256).digest()[:CHECKSUM_BYTES]


def encode_cursor(listing: str, sort: str, filters: dict[str, Any], position: Position) -> str:
    payload = json.dumps(
        {"l": listing, "s": sort, "f": _fingerprint(filters), "p": position_to_json(position)},
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    return base64.urlsafe_b64encode(checksum(payload) + payload).rstrip(b"=").decode()


def decode_cursor(token: str, listing: str, sort: str, filters: dict[str, Any], keys: tuple[SortKey, ...]) -> Position:
    """The position a cursor names; ``BadRequest`` if it is not an untouched cursor of this query."""
    not_ours = "The cursor is not one this API issued; pass the nextCursor of the previous page exactly as served."
    if not CURSOR_CHARACTERS.fullmatch(token):
        raise BadRequest(not_ours)
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(not_ours) from None
    given, payload = raw[:CHECKSUM_BYTES], raw[CHECKSUM_BYTES:]
    if len(given) < CHECKSUM_BYTES or not payload:
        raise BadRequest(not_ours)
    if given != checksum(payload):
        raise BadRequest("The cursor has been altered; pass the nextCursor of the previous page exactly as served.")
    try:
        data = json.loads(payload)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        same_query = data.get("l") == listing and data.get("s") == sort and data.get("f") == _fingerprint(filters)
    except ValueError:
        raise BadRequest(not_ours) from None
    if not same_query:
        raise BadRequest(
            "The cursor belongs to a different query (another listing, sort or filter); "
            "repeat the query it came from, or start again without a cursor."
        )
    try:
        return position_from_json(keys, data.get("p"))
    except PositionError:
        raise BadRequest(not_ours) from None


class Listing:
    """The cursor bookkeeping of one list request."""

    def __init__(self, name: str, sort: str, filters: dict[str, Any], keys: tuple[SortKey, ...]):
        self.name, self.sort, self.filters, self.keys = name, sort, filters, keys

    def after(self, cursor: str | None) -> Position | None:
        return None if cursor is None else decode_cursor(cursor, self.name, self.sort, self.filters, self.keys)

    def next(self, position: Position | None) -> str | None:
        return None if position is None else encode_cursor(self.name, self.sort, self.filters, position)
