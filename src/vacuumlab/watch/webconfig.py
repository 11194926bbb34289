"""The exporter's web configuration: the YAML file that postgres_exporter and node_exporter
read (``--web.config.file``, prometheus/exporter-toolkit's docs/web-configuration.md), the
part of it that says TLS (``tls_server_config``) and passwords (``basic_auth_users``), and the
password check it asks for.

As in exporter-toolkit, file names are relative to the configuration file's directory, and a
key vacuumlab does not read is an error rather than a setting silently ignored.
"""

from __future__ import annotations

import base64
import hmac
import re
import secrets
import ssl
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import bcrypt
import yaml

from vacuumlab.errors import VacuumlabError

CLIENT_AUTH_TYPES = {
    "NoClientCert": ssl.CERT_NONE,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
MIN_VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
TLS_KEYS = ("cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version")
TOP_KEYS = ("tls_server_config", "basic_auth_users")
#: htpasswd -B writes $2y$, Python's bcrypt $2b$, older tools $2a$; the cost is 4 to 31.
BCRYPT_HASH = re.compile(r"\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")
REALM = "vacuumlab"
#: Right passwords remembered at most, the oldest forgotten first: a scrape needs one per user;
#: the bound keeps memory flat whatever clients send.
REMEMBERED = 64


@dataclass(frozen=True, slots=True)
class Tls:
    """``tls_server_config``: the server's certificate and key, and the client certificates
    it asks for."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None
    client_auth_type: str = "NoClientCert"
    min_version: str = "TLS12"

    def context(self) -> ssl.SSLContext:
        """The server's TLS context; a one-line error when a file cannot be used."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = MIN_VERSIONS[self.min_version]
        for name, path in (("cert_file", self.cert_file), ("key_file", self.key_file)):
            _readable(name, path)
        try:
            context.load_cert_chain(self.cert_file, self.key_file, password=_no_passphrase)
        except (OSError, ValueError) as exc:
            raise VacuumlabError(
                f"tls_server_config: cannot use cert_file {self.cert_file} with key_file "
                f"{self.key_file}: {_reason(exc)}; give a PEM certificate and its unencrypted key"
            ) from None
        context.verify_mode = CLIENT_AUTH_TYPES[self.client_auth_type]
        if self.client_ca_file is not None:
            _readable("client_ca_file", self.client_ca_file)
            try:
                context.load_verify_locations(cafile=self.client_ca_file)
            except (OSError, ValueError) as exc:
                raise VacuumlabError(
                    f"tls_server_config: cannot use client_ca_file {self.client_ca_file}: "
                    f"{_reason(exc)} (it takes PEM certificates)"
                ) from None
        return context


@dataclass(frozen=True, slots=True)
class WebConfig:
    """TLS (None: plain HTTP) and the users let in, each with a bcrypt hash (none: no
    password asked)."""

    tls: Tls | None = None
    users: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def load(cls, path: Path) -> WebConfig:
        """The file at ``path``; a one-line error for anything it cannot be used for (the
        certificate and key are loaded once here, so that they fail before anything listens)."""
        where = f"web config {path}"
        document = _mapping(_read(path), where, TOP_KEYS)
        config = cls(
            tls=_tls(document.get("tls_server_config"), path.parent, where),
            users=MappingProxyType(_users(document.get("basic_auth_users"), where)),
        )
        if config.tls is not None:
            try:
                config.tls.context()
            except VacuumlabError as exc:
                raise VacuumlabError(f"{where}: {exc}") from None
        return config

    def guard(self, app: WSGIApplication) -> WSGIApplication:
        """``app`` behind basic auth when users are set, ``app`` itself otherwise."""
        return BasicAuth(self.users).guard(app) if self.users else app


class BasicAuth:
    """Checks ``Authorization: Basic`` against the bcrypt hashes, as exporter-toolkit does.

    An unknown user costs a check against a dummy hash of the users' highest cost, so that
    user names cannot be told apart by timing. A right password is remembered, by an HMAC
    under a key of this process, so that a scrape every 15 s does not pay bcrypt's cost each
    time; a wrong one is checked every time. One bcrypt check runs at a time: a flood of
    wrong passwords takes one core, and scrapes with a remembered password do not wait for it.
    """

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = {user: hashed.encode() for user, hashed in users.items()}
        cost = max(int(hashed[4:6]) for hashed in users.values())
        self._dummy = bcrypt.hashpw(secrets.token_hex(16).encode(), bcrypt.gensalt(cost))
        self._key = secrets.token_bytes(32)
        self._remembered: dict[bytes, None] = {}  # a dict keeps order: the oldest goes first
        self._lock = threading.Lock()
        self._checking = threading.Lock()

    def allows(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header names a user with their right password."""
        credentials = _credentials(header)
        if credentials is None:
            return False
        key = hmac.digest(self._key, credentials, "sha256")
        with self._lock:
            if key in self._remembered:
                return True
        name, _, password = credentials.partition(b":")
        hashed = self._users.get(name.decode("utf-8", "replace"))
        right = self._check(password, hashed or self._dummy) and hashed is not None
        if right:
            with self._lock:
                if len(self._remembered) >= REMEMBERED:
                    del self._remembered[next(iter(self._remembered))]
                self._remembered[key] = None
        return right

    def _check(self, password: bytes, hashed: bytes) -> bool:
        with self._checking:
            try:
                return bcrypt.checkpw(password, hashed)
            except ValueError:  # bcrypt 5 refuses passwords over 72 bytes: none can be right
                return False

    def guard(self, app: WSGIApplication) -> WSGIApplication:
        """``app`` for requests that pass, 401 with a Basic challenge for the others."""

        def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
            if self.allows(environ.get("HTTP_AUTHORIZATION")):
                return app(environ, start_response)
            start_response(
                "401 Unauthorized",
                [
                    ("WWW-Authenticate", f'Basic realm="{REALM}"'),
                    ("Content-Type", "text/plain; charset=utf-8"),
                ],
            )
            return [b"401 Unauthorized\n"]

        return guarded


def _credentials(header: str | None) -> bytes | None:
    """``user:password`` from a Basic header (RFC 7617), or None when it is not one."""
    scheme, _, token = (header or "").strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True)
    except ValueError:  # binascii.Error, or a character outside ASCII
        return None
    return decoded if b":" in decoded else None


def _read(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise VacuumlabError(f"cannot read the web config {path}: {_reason(exc)}") from None
    except UnicodeDecodeError:
        raise VacuumlabError(f"web config {path}: not UTF-8 text") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise VacuumlabError(f"web config {path}: not valid YAML: {_yaml_problem(exc)}") from None


def _mapping(value: object, where: str, keys: tuple[str, ...]) -> dict[Any, Any]:
    """``value`` as a mapping holding only ``keys`` (nothing at all: an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VacuumlabError(f"{where}: expected a mapping with the keys {', '.join(keys)}")
    for key in value:
        if key not in keys:
            raise VacuumlabError(
                f"{where}: vacuumlab does not read the key {key!r}; it reads {', '.join(keys)}"
            )
    return value


def _tls(value: object, directory: Path, where: str) -> Tls | None:
    where = f"{where}: tls_server_config"
    section = _mapping(value, where, TLS_KEYS)
    if not section:
        return None
    text = {key: _text(section, key, where) for key in TLS_KEYS if key in section}
    if "cert_file" not in text or "key_file" not in text:
        raise VacuumlabError(f"{where}: cert_file and key_file go together; give both")
    auth = _choice(text, "client_auth_type", CLIENT_AUTH_TYPES, where)
    if "client_ca_file" in text and auth == "NoClientCert":
        raise VacuumlabError(
            f"{where}: client_ca_file is set but client_auth_type is NoClientCert; "
            "set client_auth_type: RequireAndVerifyClientCert"
        )
    if "client_ca_file" not in text and auth != "NoClientCert":
        raise VacuumlabError(f"{where}: client_auth_type {auth} needs client_ca_file")
    ca = text.get("client_ca_file")
    return Tls(
        cert_file=directory / text["cert_file"],
        key_file=directory / text["key_file"],
        client_ca_file=None if ca is None else directory / ca,
        client_auth_type=auth,
        min_version=_choice(text, "min_version", MIN_VERSIONS, where),
    )


def _users(value: object, where: str) -> dict[str, str]:
    where = f"{where}: basic_auth_users"
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise VacuumlabError(f"{where}: expected a mapping of user name to bcrypt hash")
    for user, hashed in value.items():
        if not isinstance(user, str) or not user or ":" in user:
            raise VacuumlabError(
                f"{where}: the user name {user!r} is not one basic auth can send; "
                "quote it, without ':'"
            )
        # Never the value in the message: it may be a password written in clear by mistake.
        if not isinstance(hashed, str) or not BCRYPT_HASH.fullmatch(hashed):
            raise VacuumlabError(
                f"{where}: the hash of {user!r} is not a bcrypt hash ($2y$, $2b$ or $2a$); "
                f"make one with: htpasswd -nBC 10 {user}"
            )
    return dict(value)


def _text(section: dict[Any, Any], key: str, where: str) -> str:
    value = section[key]
    if not isinstance(value, str) or not value.strip():
        raise VacuumlabError(f"{where}: {key} takes a string, not {value!r}")
    return value


def _choice(text: dict[str, str], key: str, choices: Mapping[str, object], where: str) -> str:
    """The value of ``key`` (the first choice when unset), or a one-line error naming them."""
    value = text.get(key, next(iter(choices)))
    if value not in choices:
        raise VacuumlabError(f"{where}: {key} takes {' or '.join(choices)}, not {value!r}")
    return value


def _readable(name: str, path: Path) -> None:
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise VacuumlabError(f"tls_server_config: {name} {path}: {_reason(exc)}") from None


def _no_passphrase() -> str:
    raise ValueError("the key is encrypted")


def _reason(exc: BaseException) -> str:
    """Why a file could not be used, in a few words: OpenSSL's text without its library tag
    and source line (``[X509: KEY_VALUES_MISMATCH] key values mismatch (_ssl.c:3926)``)."""
    if isinstance(exc, ssl.SSLError):
        text = str(exc.args[-1] if exc.args else exc)
        text = re.sub(r"^\[[^\]]*\]\s*|\s*\(_ssl\.c:\d+\)$", "", text)
        return "not PEM" if text == "PEM lib" else text
    reason = getattr(exc, "strerror", None) or str(exc)
    return " ".join(str(reason).split())


def _yaml_problem(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(exc).split())
