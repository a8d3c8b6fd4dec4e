"""A corpus of hostile input in every query parameter, every path parameter and every form
field of the site: never a 5xx, always a clear message, never reflected as markup.

The parameters and fields are not listed by hand: query and path parameters come from the
app's routes, form fields from the forms on the pages a visitor, a signed-in account and a
maintainer see. A new parameter or field is fuzzed without anyone remembering to.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from bs4 import BeautifulSoup, SoupStrainer
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from httpx import Response
from sqlalchemy import select

from kernelindex.db.rerun_tables import RerunBundle
from kernelindex.db.tables import Environment, Implementation, Protocol, Run, Source, Workload
from kernelindex.ingest.reruns.importer import import_bundled_reruns
from kernelindex.rerun.implementations import REGISTRY
from kernelindex.slugs import slugify
from kernelindex.store import accounts, attestations
from tests.factories import PASSWORD, csrf_token, sign_in
from tests.rerun_bundles import v1_reruns

# id → value; bytes are sent as they are (percent-encoded), so they can be invalid UTF-8.
PAYLOADS: dict[str, str | bytes] = {
    "xss-script": "<script>alert(1)</script>",
    "xss-attribute": '"><img src=x onerror=alert(1)>',
    "xss-javascript-url": "javascript:alert(document.cookie)",
    "xss-svg": "<svg/onload=alert(1)>",
    "sql-quote": "' OR '1'='1",
    "sql-stacked": "1; DROP TABLE run;--",
    "sql-like": "%_%' --",
    "sql-backslash": "\\'\\\"",
    "overlong-ascii": "a" * 5000,
    "overlong-unicode": "é" * 1500,
    "overlong-emoji": "😀" * 1000,
    "invalid-utf8": b"\xff\xfe\xfd",
    "invalid-utf8-truncated": b"abc\xc3",
    "invalid-utf8-overlong-slash": b"\xc0\xaf",
    "utf8-surrogate": b"\xed\xa0\x80",
    "path-traversal": "../../../../etc/passwd",
    "path-traversal-encoded": "..%2F..%2F..%2Fetc%2Fpasswd",
    "path-traversal-windows": "..\\..\\windows\\win.ini",
    "absolute-path": "/etc/passwd",
    "huge-number": "9" * 40,
    "huge-negative": "-" + "9" * 40,
    "negative": "-1",
    "zero": "0",
    "float": "1.5e308",
    "not-a-number": "NaN",
    "infinity": "Infinity",
    "nul": "\x00",
    "control": "\x1b[31m",
    "rtl-override": "\u202eevil",
    "zero-width": "\u200b",
    "empty": "",
    "whitespace": "   ",
    "format-string": "%s%s%s%n{0}{__class__}",
    "template": "{{ 7*7 }}{% raw %}",
    "crlf-injection": "x\r\nSet-Cookie: pwned=1",
    "json": '{"$ne": null}',
}


# Control characters, which no field stores (PostgreSQL cannot hold NUL at all): each must be
# refused with a 400, in every form field and every field of an API body. Line breaks and tabs
# are refused too, except in a field written over several lines.
CONTROLS = {
    "nul": "\x00",
    "nul-inside": "fine\x00fine",
    "escape": "\x1b[31m",
    "bell": "\x07",
    "backspace": "ab\x08",
    "vertical-tab": "a\x0bb",
    "delete": "a\x7f",
    "c1-next-line": "a\x85b",
}
LINE_BREAKS = {"tab": "a\tb", "line-feed": "a\nb", "carriage-return": "a\rb"}
MULTILINE = {"body", "report_body", "document"}


def encoded(value: str | bytes) -> str:
    return quote(value.encode() if isinstance(value, str) else value, safe="")


class ErrorMessages(SoupStrainer):
    """Builds only the elements a page's error message stands in (and what they hold): this
    test parses a thousand error pages, and building every tag of each was most of its time."""

    def allow_tag_creation(self, nsprefix: str | None, name: str, attrs: Any) -> bool:
        attrs = attrs or {}
        classes = attrs.get("class") or ""
        classes = classes.split() if isinstance(classes, str) else classes
        return (
            (name == "section" and "error" in classes)
            or "error-text" in classes
            or attrs.get("role") == "alert"
            or attrs.get("id") == "admin-error"
        )

    def allow_string_creation(self, string: str) -> bool:
        return False  # text outside those elements


def assert_clear(response: Response, payload: str | bytes, where: str) -> None:
    """Not a 5xx; a 4xx says what is wrong; HTML never carries the payload as markup."""
    status, kind = response.status_code, response.headers.get("content-type", "")
    assert status < 500, f"{where}: HTTP {status}"
    assert "set-cookie" not in response.headers or "pwned" not in response.headers["set-cookie"], where
    if status >= 400:
        if "json" in kind:
            assert response.json()["detail"].strip(), where
        elif "html" in kind:
            soup = BeautifulSoup(response.text, "html.parser", parse_only=ErrorMessages())
            messages = soup.select("section.error p, .error-text, [role=alert], #admin-error")
            assert any(m.get_text(strip=True) for m in messages), f"{where}: HTTP {status} without a message"
        else:
            assert response.text.strip(), where
    if "html" in kind and isinstance(payload, str) and "<" in payload:
        assert payload not in response.text, f"{where}: the payload came back as markup"


# --- The site under test ----------------------------------------------------------------------


class Site:
    def __init__(self, client: TestClient, values: dict[str, list[str]]):
        self.client = client
        self.values = values


class AllowEverything:
    """Rate limits off: this test is about what the input does, not how often it comes."""

    def allow(self, limit: Any, subject: str) -> bool:
        return True

    def refund(self, limit: Any, subject: str) -> None:
        pass


@pytest.fixture
def site(loaded_db, make_app) -> Iterator[Site]:  # type: ignore[no-untyped-def]
    assert all(result.error is None for result in import_bundled_reruns(loaded_db.sessions, v1_reruns()))
    with loaded_db.sessions.begin() as session:
        ada = accounts.create_user(session, "ada", PASSWORD)
        accounts.create_user(session, "grace", PASSWORD, maintainer=True)
        run = session.scalars(select(Run).order_by(Run.id)).first()
        attestation = attestations.add_attestation(session, ada, run, {"type": "reproduced", "body": "Same here."})
        attestations.add_report(session, run, "other", "Looks off.", ada)
        workload = session.scalars(select(Workload).order_by(Workload.id)).first()
        values = {
            "ref": [workload.name, run.name],
            "slug": [
                workload.name,
                session.scalars(select(Implementation.project_slug)).first(),
                session.scalars(select(Environment.gpu_slug)).first(),
                slugify(
                    session.scalars(select(Workload.origin_model).where(Workload.origin_model.is_not(None))).first()
                ),
                session.scalars(select(Source.slug)).first(),
            ],
            "name": [run.name, attestation.name, session.scalars(select(Protocol.name)).first(), *REGISTRY],
            "bundle_id": [session.scalars(select(RerunBundle.bundle_id)).first()],
            "digest": [run.digest],
            "fmt": ["bib", "txt"],
            "kind": ["BenchmarkRun"],
            "part": ["1"],
            "handle": ["ada"],
        }
    app = make_app(loaded_db, secret_key="bad input")
    app.state.rate_limiter = AllowEverything()
    with TestClient(app, follow_redirects=False) as client:
        yield Site(client, values)


def get_routes(app: Any) -> Iterator[APIRoute]:
    def walk(routes: Any) -> Iterator[Any]:
        for route in routes:
            if hasattr(route, "original_router"):
                yield from walk(route.original_router.routes)
            else:
                yield route

    for route in walk(app.routes):
        if isinstance(route, APIRoute) and "GET" in route.methods:
            yield route


def query_parameters(dependant: Any) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= query_parameters(dependency)
    return names


def fill(template: str, values: dict[str, str]) -> str:
    return re.sub(r"{(\w+)}", lambda match: values[match[1]], template)


def working_path(site: Site, route: APIRoute) -> str:
    """The route's path with path parameters that find something (no 404), so that its query
    parameters are read; a route needing a query parameter may answer 400 here."""
    names = [param.name for param in route.dependant.path_params]
    for combination in itertools.product(*(site.values[name] for name in names)):
        path = fill(route.path, dict(zip(names, combination, strict=True)))
        if site.client.get(path).status_code != 404:
            return path
    raise AssertionError(f"no known value finds anything at {route.path}")


# --- Query and path parameters ---------------------------------------------------------------

# In a query string or a path these reach the very check of the payload named beside them: over
# the 168 parameters of every GET route, on SQLite and on PostgreSQL, each drew the same status and
# the same message (less the payload it quotes) as that one. Forms and API bodies still get them.
SAME_CHECK_IN_AN_ADDRESS = {
    "utf8-surrogate": "invalid-utf8",
    "invalid-utf8-truncated": "invalid-utf8",
    "invalid-utf8-overlong-slash": "invalid-utf8",
    "sql-stacked": "sql-quote",
    "zero-width": "rtl-override",
    "infinity": "not-a-number",
}
ADDRESS_PAYLOADS = {name: value for name, value in PAYLOADS.items() if name not in SAME_CHECK_IN_AN_ADDRESS}

# The routes are fuzzed in shards, so that the parallel workers share the corpus (about 3,000
# requests a database) instead of one worker finishing it alone at the end of the run.
SHARDS = 4


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_query_and_path_parameter_refuses_hostile_input_clearly(site, shard):
    tried = 0
    routes = sorted(get_routes(site.client.app), key=lambda route: route.path)
    assert len(routes) > 40, "the app's GET routes were not found"
    routes = routes[shard::SHARDS]
    for route in routes:
        path = working_path(site, route)
        for name in sorted(query_parameters(route.dependant)):
            for payload in ADDRESS_PAYLOADS.values():
                response = site.client.get(f"{path}?{name}={encoded(payload)}")
                assert_clear(response, payload, f"GET {route.path}?{name}={payload!r:.40}")
                tried += 1
        for name in (param.name for param in route.dependant.path_params):
            for payload in ADDRESS_PAYLOADS.values():
                values = {other: site.values[other][0] for other in site.values} | {name: encoded(payload)}
                response = site.client.get(fill(route.path, values))
                assert_clear(response, payload, f"GET {route.path} with {name}={payload!r:.40}")
                tried += 1
    assert tried > 3000 // SHARDS // 2, tried
    print(f"\nbad input: {tried} requests over the query and path parameters of {len(routes)} routes, no 5xx")


# --- Form fields ----------------------------------------------------------------------------

DEFAULTS = {
    "handle": "newcomer",
    "password": PASSWORD,
    "confirm": PASSWORD,
    "body": "Same figure here.",
    "report_body": "The figure looks wrong.",
    "label": "laptop",
}


def forms_on(client: TestClient, path: str) -> list[tuple[str, dict[str, str], list[str]]]:
    """Each POST form on the page: its action, its fields' default values, and the fields to fuzz."""
    soup = BeautifulSoup(client.get(path).text, "html.parser")
    found = []
    for form in soup.select('form[method="post"]'):
        defaults: dict[str, str] = {}
        for element in form.select("input[name], textarea[name], select[name]"):
            name = element["name"]
            if element.name == "select":
                option = element.select_one("option[value]:not([value=''])") or element.select_one("option")
                defaults[name] = option.get("value", "") if option else ""
            elif element.name == "textarea":
                defaults[name] = element.get_text() or DEFAULTS.get(name, "A note.")
            else:
                defaults[name] = element.get("value") or DEFAULTS.get(name, "")
        fields = [name for name in defaults if name != "csrf_token"]
        if fields:
            found.append((form["action"], defaults, fields))
    return found


# Who is signed in, and the page whose forms are fuzzed ({run}, {attestation}: the site's own);
# a case each, so that the parallel workers share them. Between them they hold every form.
FORM_PAGES = [
    (None, "/signup"),
    (None, "/signin"),
    ("ada", "/account"),
    ("ada", "/submit"),
    ("ada", "/runs/{run}"),
    (None, "/runs/{run}/report"),
    ("grace", "/admin?run={run}&attestation={attestation}"),
    ("grace", "/admin/runner-keys"),
]
# Fields of each page (a form's action and field, ids folded), at least: a form that loses its
# fields, or a page that loses its form, fails here.
FORM_FIELDS_AT_LEAST = {
    "/signup": 3,
    "/signin": 3,
    "/account": 2,
    "/submit": 1,
    "/runs/{run}": 8,
    "/runs/{run}/report": 2,
    "/admin": 12,
    "/admin/runner-keys": 4,
}


@pytest.mark.parametrize(("handle", "template"), FORM_PAGES, ids=[page for _, page in FORM_PAGES])
def test_every_form_field_refuses_hostile_input_clearly(site, handle, template):
    page = template.format(run=site.values["name"][0], attestation=site.values["name"][1])
    tried, fields_seen = 0, set()
    site.client.cookies.clear()
    if handle:
        sign_in(site.client, handle)
    for action, defaults, fields in forms_on(site.client, page):
        for field in fields:
            # One of each kind: the admin page lists a form per open report and attestation.
            kind = f"{re.sub(r'/([0-9]+|att-[^/]+)/', '/{id}/', action)} {field}"
            if kind in fields_seen:
                continue
            fields_seen.add(kind)
            # A payload below may have signed someone up or out: start each field from the page's session.
            site.client.cookies.clear()
            if handle:
                sign_in(site.client, handle)
            defaults = {**defaults, "csrf_token": csrf_token(site.client, page)}
            refused = CONTROLS | ({} if field in MULTILINE else LINE_BREAKS)
            for payload in refused.values():
                body = urlencode({k: v for k, v in defaults.items() if k != field}) + f"&{field}={encoded(payload)}"
                response = site.client.post(
                    action, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
                )
                where = f"POST {action} {field}={payload!r}"
                assert response.status_code == 400 and "control characters" in response.text, where
                assert_clear(response, payload, where)
                tried += 1
            for payload in PAYLOADS.values():
                body = urlencode({k: v for k, v in defaults.items() if k != field}) + f"&{field}={encoded(payload)}"
                response = site.client.post(
                    action, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
                )
                assert_clear(response, payload, f"POST {action} {field}={payload!r:.40}")
                tried += 1
        if handle:  # a successful sign-up or sign-out changes who is signed in
            site.client.cookies.clear()
            sign_in(site.client, handle)
    assert len(fields_seen) >= FORM_FIELDS_AT_LEAST[template.split("?")[0]], sorted(fields_seen)
    print(f"\nbad input: {tried} form submissions over {len(fields_seen)} fields of {page}, no 5xx")


# --- The JSON API's request body ------------------------------------------------------------------

ATTESTATION = {"type": "reproduced", "body": "Same figure here.", "bodyFormat": "plain"}
OPTIONAL = ("evidenceUrl", "measuredLatencyNs", "environmentSummary")
NUMBERS: dict[str, Any] = {"huge": 10**40, "negative": -1, "float": 1.5e308, "bool": True, "list": [1], "null": None}


def json_body(field: str, value: Any) -> bytes:
    """The attestation with ``field`` set to ``value``; bytes are spliced in raw (invalid UTF-8)."""
    if isinstance(value, bytes):
        marker = "\ue000"
        text = json.dumps({**ATTESTATION, field: marker}, ensure_ascii=False)
        return text.encode().replace(marker.encode(), value)
    return json.dumps({**ATTESTATION, field: value}).encode()


def test_every_api_body_field_refuses_hostile_input_clearly(site, loaded_db):
    with loaded_db.sessions.begin() as session:
        user = accounts.find_user(session, "ada")
        _, secret = accounts.create_api_key(session, user, "bad input", ["attest"])
    url = f"/api/v1/runs/{site.values['name'][0]}/attestations"
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    tried = 0
    for field in (*ATTESTATION, *OPTIONAL):
        for payload in (*PAYLOADS.values(), *NUMBERS.values()):
            response = site.client.post(url, content=json_body(field, payload), headers=headers)
            assert_clear(
                response, payload if isinstance(payload, str | bytes) else "", f"POST {url} {field}={payload!r:.40}"
            )
            assert response.status_code in (201, 400), f"{field}={payload!r:.40}: {response.status_code}"
            tried += 1
        refused = CONTROLS | ({} if field == "body" else LINE_BREAKS)
        for payload in refused.values():
            response = site.client.post(url, content=json_body(field, payload), headers=headers)
            assert response.status_code == 400, f"{field}={payload!r}: {response.status_code}"
            assert_clear(response, payload, f"POST {url} {field}={payload!r}")
            tried += 1
    for body in (
        b"",
        b"{",
        b"[]",
        b"null",
        b'{"type": "reproduced"}',
        b"\xff\xfe",
        json.dumps(ATTESTATION).encode() * 2,
    ):
        assert_clear(site.client.post(url, content=body, headers=headers), "", f"POST {url} {body!r:.40}")
        tried += 1
    print(
        f"\nbad input: {tried} JSON bodies over the {len(ATTESTATION) + len(OPTIONAL)} fields of an attestation, no 5xx"
    )


# --- A submitted run's document ---------------------------------------------------------------------

EXAMPLE_SUBMISSION = Path(__file__).resolve().parents[1] / "fixtures" / "submissions" / "example.json"


def submission_body(path: tuple[str, ...], value: Any) -> bytes:
    """The example submission with the field at ``path`` set to ``value`` (bytes spliced in raw)."""
    document = json.loads(EXAMPLE_SUBMISSION.read_text())
    target = document
    for key in path[:-1]:
        target = target[key]
    if isinstance(value, bytes):
        marker = "\ue000"
        target[path[-1]] = marker
        return json.dumps(document, ensure_ascii=False).encode().replace(marker.encode(), value)
    target[path[-1]] = value
    return json.dumps(document).encode()


def test_every_submission_field_refuses_hostile_input_clearly(site, loaded_db):
    with loaded_db.sessions.begin() as session:
        user = accounts.find_user(session, "ada")
        _, secret = accounts.create_api_key(session, user, "bad input", ["submissions:write"])
    url = "/api/v1/submissions"
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    fields = [
        ("workload", "slug"),
        ("evidenceUrl",),
        ("run", "metadata", "title"),
        ("run", "spec", "observedAt"),
        ("implementation", "spec", "project", "name"),
        ("environment", "spec", "hardware", "product"),
        ("cases", "0", "caseDigest"),
    ]
    tried = 0
    for path in fields:
        steps = tuple(int(step) if step.isdigit() else step for step in path)
        for payload in (*PAYLOADS.values(), *NUMBERS.values(), *CONTROLS.values()):
            response = site.client.post(url, content=submission_body(steps, payload), headers=headers)
            where = f"POST {url} {'.'.join(path)}={payload!r:.40}"
            assert_clear(response, payload if isinstance(payload, str | bytes) else "", where)
            # A title is presentation, outside the run's digest: the one field whose change is still valid.
            if response.status_code != 202:
                assert 400 <= response.status_code < 500 and response.json()["check"], where
            tried += 1
    print(f"\nbad input: {tried} submissions over {len(fields)} fields of a submitted run, no 5xx")
