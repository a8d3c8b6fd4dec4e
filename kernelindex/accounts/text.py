"""The one check of text people send (every form field and every field of an API body).

PostgreSQL cannot store NUL, and no field means a control character: an escape sequence or a
backspace in a handle or a note only hides what it says. Line breaks and tabs belong only in a
field written over several lines (an attestation's or a report's body).
"""

from __future__ import annotations

import re

# C0 controls, DEL and C1 controls; of these, a multi-line field may hold TAB, LF and CR.
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def control_character_problem(value: str, multiline: bool = False) -> str | None:
    """Why ``value`` cannot be taken as text (it holds a control character), or ``None``."""
    if (_CONTROL_BUT_LINES if multiline else _ANY_CONTROL).search(value) is None:
        return None
    if multiline:
        return "must not contain control characters other than line breaks and tabs"
    return "must not contain control characters (such as NUL, a tab or a line break)"
