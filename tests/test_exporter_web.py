"""The exporter's --web-config against the embedded PostgreSQL: scrapes over TLS with basic
auth (http.client, a certificate made by openssl, bcrypt hashes of cost 4), what a client
without the right password or without TLS gets, the one-line errors of a bad file, and the
warning for metrics served in clear beyond loopback."""

from __future__ import annotations

import base64
import http.client
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import bcrypt
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from helpers.cli import assert_one_line_error, run_cli
from helpers.exporter import exporting, value
from vacuumlab.errors import VacuumlabError
from vacuumlab.pg.sandbox import Sandbox
from vacuumlab.watch import webconfig
from vacuumlab.watch.exporter import Listen, exposure_warning
from vacuumlab.watch.webconfig import BasicAuth, Tls, WebConfig

USER, PASSWORD = "prometheus", "s3cret: with a colon"
#: Cost 4, bcrypt's lowest: each check takes about a millisecond.
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()


def make_pair(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (EC: made in milliseconds)."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        ["/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
         "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """server.crt/.key for the exporter, client.crt/.key for a client (its own CA)."""
    directory = tmp_path_factory.mktemp("pki")
    make_pair(directory, "server")
    make_pair(directory, "client")
    return directory


def tls(pki: Path, *, client_certificates: bool = False) -> Tls:
    """The exporter's certificate; with ``client_certificates``, clients must show client.crt."""
    if not client_certificates:
        return Tls(pki / "server.crt", pki / "server.key")
    return Tls(
        pki / "server.crt", pki / "server.key", pki / "client.crt", "RequireAndVerifyClientCert"
    )


def client_context(pki: Path, *, cert: bool = False) -> ssl.SSLContext:
    """Trusts only the exporter's certificate (the host name checked against its SAN)."""
    context = ssl.create_default_context(cafile=pki / "server.crt")
    if cert:
        context.load_cert_chain(pki / "client.crt", pki / "client.key")
    return context


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


RIGHT = basic(USER, PASSWORD)


def get(
    port: int, *, context: ssl.SSLContext | None, authorization: str | None = None
) -> tuple[int, http.client.HTTPMessage, str]:
    """GET /metrics: the status, headers and body, whatever the status."""
    if context is None:
        conn: http.client.HTTPConnection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    else:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=context)
    headers = {} if authorization is None else {"Authorization": authorization}
    try:
        conn.request("GET", "/metrics", headers=headers)
        response = conn.getresponse()
        return response.status, response.headers, response.read().decode()
    finally:
        conn.close()


def parse(text: str) -> dict[str, Metric]:
    return {family.name: family for family in text_string_to_metric_families(text)}


@pytest.fixture(scope="module")
def guarded(sandbox: Sandbox, pki: Path) -> Iterator[int]:
    """One exporter over TLS that asks for USER's password, shared by the module's tests."""
    with exporting(sandbox.dsn, web=WebConfig(tls(pki), {USER: HASH})) as (url, _):
        port = urlsplit(url).port
        yield port


def test_a_scrape_over_tls_with_the_right_password(guarded: int, pki: Path) -> None:
    for _ in range(2):  # the second with the password remembered
        status, _, body = get(guarded, context=client_context(pki), authorization=RIGHT)
        assert status == 200, body
        assert value(parse(body), "vacuumlab_up") == 1


@pytest.mark.parametrize(
    "authorization",
    [
        basic(USER, "wrong"),
        basic(USER, PASSWORD + "x"),
        basic("nobody", PASSWORD),
        None,
        "Basic not-base64!",
        "Bearer " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode(),
        "Basic " + base64.b64encode(USER.encode()).decode(),  # no colon, no password
    ],
    ids=["wrong", "longer", "unknown-user", "no-header", "bad-base64", "bearer", "no-colon"],
)
def test_anything_but_the_right_password_gets_401(
    guarded: int, pki: Path, authorization: str | None
) -> None:
    right = get(guarded, context=client_context(pki), authorization=RIGHT)
    # After a right one, remembered: a wrong one must still be refused.
    status, headers, body = get(guarded, context=client_context(pki), authorization=authorization)
    assert right[0] == 200
    assert status == 401
    assert headers["WWW-Authenticate"] == 'Basic realm="vacuumlab"'
    assert "vacuumlab_up" not in body


def test_basic_auth_without_tls(sandbox: Sandbox) -> None:
    with exporting(sandbox.dsn, web=WebConfig(users={USER: HASH})) as (url, _):
        port = urlsplit(url).port
        refused = get(port, context=None, authorization=basic(USER, "wrong"))
        status, _, body = get(port, context=None, authorization=RIGHT)
    assert refused[0] == 401
    assert status == 200
    assert value(parse(body), "vacuumlab_up") == 1


def counting_checks(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The hashes bcrypt.checkpw is asked to check against, as the exporter calls it."""
    checked: list[bytes] = []
    real = bcrypt.checkpw

    def checkpw(password: bytes, hashed: bytes) -> bool:
        checked.append(hashed)
        return real(password, hashed)

    monkeypatch.setattr(webconfig.bcrypt, "checkpw", checkpw)
    return checked


def test_a_right_password_is_checked_once_a_wrong_one_every_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked = counting_checks(monkeypatch)
    auth = BasicAuth({USER: HASH, "other": HASH})
    assert [auth.allows(RIGHT) for _ in range(3)] == [True] * 3
    assert checked == [HASH.encode()]
    assert [auth.allows(basic(USER, "wrong")) for _ in range(3)] == [False] * 3
    assert len(checked) == 4
    # The cache is per user and password: the same password as another user is checked.
    assert auth.allows(basic("other", PASSWORD))
    assert len(checked) == 5


def test_an_unknown_user_costs_a_check_of_the_same_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = counting_checks(monkeypatch)
    slow = bcrypt.hashpw(b"x", bcrypt.gensalt(5)).decode()
    auth = BasicAuth({USER: HASH, "admin": slow})
    assert not auth.allows(basic("nobody", PASSWORD))
    assert not auth.allows(basic("nobody", PASSWORD))
    assert len(checked) == 2
    dummy = checked[0]
    assert dummy not in (HASH.encode(), slow.encode())
    assert dummy.startswith(b"$2b$05$")  # the highest cost of the users'
    assert not auth.allows(basic("", ""))  # an empty user name is an unknown one too
    assert len(checked) == 3


def test_plain_http_to_the_tls_listener_gets_no_metrics(guarded: int, pki: Path) -> None:
    with pytest.raises((http.client.HTTPException, OSError)):
        get(guarded, context=None, authorization=RIGHT)
    # A client that connects and says nothing holds no other scrape up.
    with socket.create_connection(("127.0.0.1", guarded)):
        status, _, body = get(guarded, context=client_context(pki), authorization=RIGHT)
    assert status == 200
    assert value(parse(body), "vacuumlab_up") == 1


def test_client_certificates(sandbox: Sandbox, pki: Path) -> None:
    with exporting(sandbox.dsn, web=WebConfig(tls(pki, client_certificates=True))) as (url, _):
        port = urlsplit(url).port
        with pytest.raises((http.client.HTTPException, OSError)):
            get(port, context=client_context(pki))
        status, _, _ = get(port, context=client_context(pki, cert=True))
    assert status == 200


def test_a_file_in_the_toolkit_format(pki: Path) -> None:
    path = pki / "web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        "  client_ca_file: client.crt\n  client_auth_type: RequireAndVerifyClientCert\n"
        f"  min_version: TLS13\nbasic_auth_users:\n  {USER}: '{HASH.replace('$2b$', '$2y$')}'\n"
    )
    config = WebConfig.load(path)
    assert config.tls == Tls(
        pki / "server.crt", pki / "server.key", pki / "client.crt",
        "RequireAndVerifyClientCert", "TLS13",
    )  # fmt: skip
    assert dict(config.users) == {USER: HASH.replace("$2b$", "$2y$")}
    assert BasicAuth(config.users).allows(RIGHT)
    empty = pki / "empty.yml"
    empty.write_text("")  # as for exporter-toolkit: plain HTTP, no password
    assert WebConfig.load(empty) == WebConfig()


BAD = {
    "missing": None,
    "yaml": "tls_server_config: [\n",
    "unknown": "http_server_config:\n  http2: false\n",
    "unknown-tls": "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n",
    "plain-password": f"basic_auth_users:\n  {USER}: {PASSWORD.split(':')[0]}\n",
    "md5": f"basic_auth_users:\n  {USER}: $apr1$abc$defghijklmnopqrstuvwx.\n",
    "cert-only": "tls_server_config:\n  cert_file: server.crt\n",
    "no-such-cert": "tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n",
    "mismatch": "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n",
    "auth-type": "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    "  client_auth_type: RequireAnyClientCert\n",
    "min-version": "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
    "  min_version: TLS10\n",
}
FRAGMENTS = {
    "missing": "cannot read the web config",
    "yaml": "not valid YAML",
    "unknown": "does not read the key 'http_server_config'",
    "unknown-tls": "does not read the key 'cipher_suites'",
    "plain-password": f"the hash of '{USER}' is not a bcrypt hash",
    "md5": f"the hash of '{USER}' is not a bcrypt hash",
    "cert-only": "cert_file and key_file go together",
    "no-such-cert": "nope.crt: No such file or directory",
    "mismatch": "key values mismatch",
    "auth-type": "client_auth_type takes NoClientCert or RequireAndVerifyClientCert",
    "min-version": "min_version takes TLS12 or TLS13",
}


@pytest.mark.parametrize("case", ["missing", "yaml", "unknown", "plain-password", "cert-only"])
def test_cli_a_bad_web_config_is_one_line_before_listening(
    sandbox: Sandbox, pki: Path, case: str
) -> None:
    """The port is taken: an exporter that listened before reading the file would say so."""
    path = pki / f"bad-{case}.yml"
    if BAD[case] is not None:
        path.write_text(BAD[case])  # type: ignore[arg-type]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "exporter", sandbox.dsn, "--listen", f"127.0.0.1:{port}", "--web-config", str(path)
        )
    assert_one_line_error(result, FRAGMENTS[case])
    assert PASSWORD.split(":")[0] not in result.stderr  # a password in clear is not repeated


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_bad_web_config_says_what(pki: Path, case: str) -> None:
    path = pki / f"load-{case}.yml"
    if BAD[case] is not None:
        path.write_text(BAD[case])  # type: ignore[arg-type]
    with pytest.raises(VacuumlabError) as raised:
        WebConfig.load(path)
    message = str(raised.value)
    assert FRAGMENTS[case] in message
    assert "\n" not in message
    assert str(path) in message


@pytest.mark.parametrize(
    ("host", "warns"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("192.0.2.7", True),
        ("db.example.com", True),
        ("127.0.0.1", False),
        ("127.3.2.1", False),
        ("::1", False),
        ("localhost", False),
    ],
)
def test_the_warning_for_metrics_in_clear_beyond_loopback(
    pki: Path, host: str, warns: bool
) -> None:
    listen = Listen(host, 9187)
    warning = exposure_warning(listen, WebConfig())
    assert (warning is not None) == warns
    assert exposure_warning(listen, WebConfig(tls(pki))) is None
    if warns:
        assert warning is not None
        assert f"without TLS on {listen.address()}" in warning
        assert "--web-config" in warning
        with_users = exposure_warning(listen, WebConfig(users={USER: HASH}))
        assert with_users is not None
        assert "passwords" in with_users


def test_urls_say_https_over_tls() -> None:
    assert Listen("::1", 9187).url(tls=True) == "https://[::1]:9187/metrics"
    assert Listen("127.0.0.1", 0).url(9300) == "http://127.0.0.1:9300/metrics"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_exporter(dsn: str, listen: str, *more: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "vacuumlab", "exporter", dsn, "--listen", listen, *more],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def until_up(port: int, process: subprocess.Popen[str], **get_args: object) -> tuple[int, str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            status, _, body = get(port, **get_args)  # type: ignore[arg-type]
        except OSError:
            time.sleep(0.1)
        else:
            return status, body
    raise AssertionError("the exporter never answered")


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    return stderr


def test_cli_warns_once_beyond_loopback_without_tls(sandbox: Sandbox) -> None:
    port = free_port()
    process = run_exporter(sandbox.dsn, f"0.0.0.0:{port}")
    try:
        status, _ = until_up(port, process, context=None)
    finally:
        stderr = stop(process)
    assert status == 200
    warnings = [line for line in stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: serving metrics without TLS on 0.0.0.0:{port}; every table's name is "
        "readable by anyone who can reach it (--web-config sets TLS and passwords)"
    ]


def test_cli_serves_tls_and_basic_auth_on_loopback_without_warning(
    sandbox: Sandbox, pki: Path
) -> None:
    path = pki / "cli-web.yml"
    path.write_text(
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
        f"basic_auth_users:\n  {USER}: {HASH}\n"
    )
    port = free_port()
    process = run_exporter(sandbox.dsn, f"127.0.0.1:{port}", "--web-config", str(path))
    try:
        refused, _ = until_up(port, process, context=client_context(pki))
        status, body = until_up(port, process, context=client_context(pki), authorization=RIGHT)
    finally:
        stderr = stop(process)
    assert refused == 401
    assert status == 200
    assert value(parse(body), "vacuumlab_up") == 1
    assert "warning" not in stderr
    assert f"serving https://127.0.0.1:{port}/metrics (basic auth)" in stderr
