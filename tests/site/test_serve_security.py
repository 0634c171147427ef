"""Sharing the app on a network: with a token password, nobody gets in without it.

The README tells people to share with ``marimo run notebooks cheatsheets --host 0.0.0.0 --token
--token-password <secret>``. This test runs that command on 127.0.0.1 (never on a real network
interface) and checks, over plain HTTP, that

- a request without the password is refused: the page redirects to the login form and the API
  answers 401;
- a wrong password is refused the same way;
- the password (``?access_token=``, what the login link carries) gets the app, and its session
  cookie keeps working afterwards.
"""

from __future__ import annotations

import http.cookiejar
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from browser_tools import ROOT, free_port, stop_process_group

pytestmark = pytest.mark.slow  # a marimo server of its own

PASSWORD = "course-test-password-7f3a"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # surface 3xx answers as HTTPError instead of following them


def _status(opener, url: str) -> tuple[int, str, str]:
    """(status, Location header, body) of a GET."""
    try:
        with opener.open(url, timeout=30) as response:
            return response.status, response.headers.get("Location", ""), response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location", ""), error.read().decode(errors="replace")


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory):
    folders = [name for name in ("notebooks", "cheatsheets") if (ROOT / name).is_dir()]
    assert folders, "neither notebooks/ nor cheatsheets/ exists: nothing to share"
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "marimo",
        "run",
        *folders,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--headless",
        "--token",
        "--token-password",
        PASSWORD,
        "--no-sandbox",
    ]
    log_path = tmp_path_factory.mktemp("shared") / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        opener = urllib.request.build_opener(_NoRedirect)
        while True:
            assert server.poll() is None, log_path.read_text(errors="replace")
            try:
                _status(opener, base + "/")
                break
            except OSError:
                assert time.monotonic() < deadline, "marimo run did not answer within 120 s"
                time.sleep(0.5)
        yield base
    finally:
        stop_process_group(server)


def _a_page() -> str:
    """A page of the gallery, as ``?file=`` (the first course page that exists)."""
    from engine.course import toc

    folders = [name for name in ("notebooks", "cheatsheets") if (ROOT / name).is_dir()]
    for entry in toc.entries():
        if (ROOT / entry.path).is_file():
            # With two folders served, the gallery's keys are relative to the repository root.
            key = entry.path if len(folders) > 1 else entry.path.split("/", 1)[1]
            return f"/?file={key}"
    raise AssertionError("no course page exists")


def _websocket_handshake(base: str, path: str, cookie: str = "") -> int:
    """Status of a websocket upgrade request (101 means the kernel channel opened)."""
    import base64
    import http.client
    import os
    import urllib.parse

    host = urllib.parse.urlparse(base)
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
    }
    if cookie:
        headers["Cookie"] = cookie
    try:
        connection.request("GET", path, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_without_the_password_the_app_is_refused(shared_server):
    opener = urllib.request.build_opener(_NoRedirect)
    for path in ("/", _a_page()):
        status, location, body = _status(opener, shared_server + path)
        assert status in (302, 303, 307, 401), f"GET {path} without a password answered {status}"
        if status != 401:
            assert "/auth/login" in location, f"{path} redirected to {location!r}, not to the login form"
        assert PASSWORD not in body and PASSWORD not in location
    status, _, _ = _status(opener, shared_server + "/api/status")
    assert status == 401, f"the API answered {status} without a password"
    # The kernel's websocket (which runs code) does not open either.
    session = "s_" + "0" * 6
    ws_path = _a_page().replace("/?file=", "/ws?file=") + f"&session_id={session}"
    assert _websocket_handshake(shared_server, ws_path) != 101, "the kernel websocket opened without a password"


def test_a_wrong_password_is_refused(shared_server):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, _, body = _status(opener, shared_server + "/?access_token=not-the-password")
    # Followed to the end: the login form, never the app.
    assert status in (200, 401)
    assert re.search(r"password|login", body, re.I), "a wrong password did not land on the login form"
    no_redirect = urllib.request.build_opener(_NoRedirect, urllib.request.HTTPCookieProcessor(jar))
    status, location, _ = _status(no_redirect, shared_server + _a_page())
    assert status != 200 and (status == 401 or "/auth/login" in location), "a wrong password opened a page"


def test_with_the_password_the_app_opens(shared_server):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    status, _, body = _status(opener, shared_server + f"/?access_token={PASSWORD}")
    assert status == 200 and "marimo" in body.lower()
    assert any(cookie.name.startswith("session") for cookie in jar), "no session cookie was set"
    # The session cookie alone (no password in the URL) now opens a page, without a redirect.
    no_redirect = urllib.request.build_opener(_NoRedirect, urllib.request.HTTPCookieProcessor(jar))
    status, location, body = _status(no_redirect, shared_server + _a_page())
    assert status == 200, f"with the session cookie a page answered {status} ({location})"
    assert "marimo" in body.lower()
    cookie = "; ".join(f"{c.name}={c.value}" for c in jar)
    ws_path = _a_page().replace("/?file=", "/ws?file=") + "&session_id=s_000001"
    assert _websocket_handshake(shared_server, ws_path, cookie) == 101, "the kernel websocket stayed shut"


def test_the_readme_shares_only_with_a_password():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line for line in readme.splitlines() if "--host 0.0.0.0" in line]
    assert commands, "the README does not say how to share the app on a network"
    for line in commands:
        assert "--token" in line and "--token-password" in line, f"sharing without a password: {line}"
