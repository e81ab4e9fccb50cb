"""Talking to a running Weaviate: connecting, the minimum server version, and turning its failures into errors a
Dify user can act on.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import ParamSpec, TypeVar, cast
from urllib.parse import urlsplit

import grpc
import httpcore
import httpx
import weaviate
import weaviate.collections.queries.base_executor as weaviate_query_results
import weaviate.connect.v4 as weaviate_v4_connection
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.retry import _Retry
from weaviate.util import _datetime_from_weaviate_str as sdk_date_parser

from hindsight_insights.config import Settings
from hindsight_insights.errors import WeaviateUnavailable

P = ParamSpec("P")
T = TypeVar("T")

MINIMUM_WEAVIATE = (1, 27)  # weaviate-client 4.x needs it; Dify's docker-compose ships 1.27 or newer

NOTHING_CHANGED = "Nothing was changed; retry once that is fixed."
SAFE_TO_RERUN = "Part of it may be done; it is safe to run again, which finishes it, once Weaviate is reachable."


def require_server_version(version: str) -> None:
    parts = re.findall(r"\d+", version)[:2]
    found = tuple(int(part) for part in parts) if len(parts) == 2 else (0, 0)
    if found < MINIMUM_WEAVIATE:
        raise WeaviateUnavailable(
            f"Weaviate {version} is too old: Hindsight Insights needs 1.27 or newer. Upgrade the weaviate service "
            "(Dify's docker-compose ships 1.27 or newer since Dify 1.0) or point the URL at a newer server."
        )


class WeaviateUnreachable(WeaviateUnavailable):
    """Weaviate refused or dropped the connection. A client that saw it is made anew before the next call: its gRPC
    channel, backing off from the failed reconnects, would otherwise fail for seconds after the server is back."""


# The client's own errors, and the transport's that it lets through unwrapped: a connection reset while a request
# waits for its answer (httpx/httpcore ReadError, RemoteProtocolError), a gRPC status from a raw stub call.
WEAVIATE_FAILURES: tuple[type[BaseException], ...] = (
    weaviate.exceptions.WeaviateBaseError,
    httpx.TransportError,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.TimeoutException,
    grpc.RpcError,
    ConnectionError,
)


@contextlib.contextmanager
def weaviate_errors(action: str, outcome: str = NOTHING_CHANGED) -> Iterator[None]:
    """Turn client, transport and server failures into one error that says what failed, what state it left, what
    to do."""
    try:
        yield
    except WEAVIATE_FAILURES as error:
        reason = describe(error)
        kind = WeaviateUnreachable if reason == UNREACHABLE else WeaviateUnavailable
        raise kind(f"Weaviate failed while {action}: {reason} {outcome}") from None


def describe(error: BaseException) -> str:
    """One plain sentence for a client or server failure: no gRPC debug text, no traceback."""
    text = str(error)
    refusals = ("UNAUTHENTICATED", "PERMISSION_DENIED", "unauthorized", "invalid api key")
    if _is_auth_failure(error) or any(refusal in text for refusal in refusals):
        return (
            "the server refused the API key (it may have changed; for Dify's bundled Weaviate it is "
            "WEAVIATE_API_KEY in Dify's docker/.env)."
        )
    timeouts = (weaviate.exceptions.WeaviateTimeoutError, httpx.TimeoutException, httpcore.TimeoutException)
    if isinstance(error, timeouts) or "Deadline Exceeded" in text or _grpc_status(error) == "DEADLINE_EXCEEDED":
        return "it did not answer in time (the server may be overloaded or stopped)."
    if (
        _caused_by(error, _CONNECTION_LOST)  # weaviate-client wraps some (WeaviateStartUpError from ReadError)
        or _grpc_status(error) == "UNAVAILABLE"
        or "UNAVAILABLE" in text
        or "failed to connect" in text
    ):
        return UNREACHABLE
    first_line = text.strip().splitlines()[0] if text.strip() else type(error).__name__
    return f"{first_line.split('debug_error_string')[0].strip()[:300]}."


_CONNECTION_LOST = (
    weaviate.exceptions.WeaviateConnectionError,
    weaviate.exceptions.WeaviateRetryError,
    httpx.TransportError,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    ConnectionError,
)
UNREACHABLE = "it could not be reached (connection refused or lost; check the URL, the gRPC port and the server)."


def _caused_by(error: BaseException | None, kinds: tuple[type[BaseException], ...]) -> bool:
    while error is not None:
        if isinstance(error, kinds):
            return True
        error = error.__cause__ or error.__context__
    return False


def _grpc_status(error: BaseException) -> str | None:
    """The status name of a raw gRPC error (a call's RpcError), else None."""
    code = getattr(error, "code", None)
    if not isinstance(error, grpc.RpcError) or not callable(code):
        return None
    status = code()
    return status.name if isinstance(status, grpc.StatusCode) else None


class _FailFastRetry(_Retry):
    """weaviate-client retries a gRPC call that finds the server unavailable five times with doubling sleeps (63 s in
    all) and has no setting for it. A stopped server must fail a tool call in seconds: three short retries (1.4 s)
    still ride out a restart's blip."""

    def with_exponential_backoff(
        self, count: int, error: str, f: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        for attempt in itertools.count():
            try:
                return f(*args, **kwargs)
            except grpc.RpcError as rpc_error:
                if cast(grpc.Call, rpc_error).code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                if attempt >= _FAST_RETRIES:
                    raise weaviate.exceptions.WeaviateRetryError(str(rpc_error), attempt) from rpc_error
                time.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")


_FAST_RETRIES = 3
weaviate_v4_connection._Retry = _FailFastRetry  # type: ignore[attr-defined]  # pinned client 4.24.1; tested


def parse_weaviate_date(string: str) -> datetime | None:
    """A date property of a query result, as weaviate-client reads it, about 20 times faster.

    The client's parser runs a regex and `strptime` for every date (about 20 us each), and a recall decodes some 150
    of them: 2.6 ms of a 23 ms search_insight at p50 at a million insights (docs/scale.md). Weaviate sends RFC 3339,
    which `datetime.fromisoformat` reads (Python 3.11+, digits past microseconds dropped, as the client drops them);
    anything it cannot read, such as year 0, goes to the client's parser."""
    try:
        return datetime.fromisoformat(string)
    except ValueError:
        return sdk_date_parser(string)


weaviate_query_results._datetime_from_weaviate_str = parse_weaviate_date  # type: ignore[attr-defined]  # 4.24.1; tested


def connect_url(settings: Settings, url: str) -> weaviate.WeaviateClient:
    """A client for a running server at `url` (gRPC on the same host unless configured)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WeaviateUnavailable(f"Weaviate URL {url!r} is not an http(s) URL such as http://weaviate:8080")
    secure = parts.scheme == "https"
    api_key = settings.weaviate_api_key.get_secret_value() if settings.weaviate_api_key else None
    try:
        client = weaviate.connect_to_custom(
            http_host=parts.hostname,
            http_port=parts.port or (443 if secure else 80),
            http_secure=secure,
            grpc_host=settings.weaviate_grpc_host or parts.hostname,
            grpc_port=settings.weaviate_grpc_port,
            grpc_secure=secure,
            auth_credentials=Auth.api_key(api_key) if api_key else None,
            skip_init_checks=True,  # avoids the client's PyPI version probe
            # On a cluster these also bound a request the node in the URL routes to a replica that just died (it can
            # block 20-30 s inside Weaviate): a search fails with "did not answer in time" after the query timeout
            # (docs/architecture.md, "Replication and consistency"; tests/test_cluster.py checks the bound).
            additional_config=AdditionalConfig(
                timeout=Timeout(
                    init=settings.weaviate_timeout_s,
                    query=settings.weaviate_query_timeout_s,
                    insert=settings.weaviate_insert_timeout_s,
                )
            ),
        )
        ready = client.is_ready()
    except Exception as error:
        if _is_auth_failure(error):
            raise WeaviateUnavailable(
                f"Weaviate at {url} refused the API key: set the key of that server "
                "(for Dify's bundled Weaviate, WEAVIATE_API_KEY in Dify's docker/.env)"
            ) from None
        raise WeaviateUnavailable(
            f"cannot reach Weaviate at {url} ({describe(error)}) Check the URL and that the server is running; inside "
            "Dify's network it is http://weaviate:8080 with gRPC on weaviate:50051."
        ) from None
    if not ready:
        client.close()
        raise WeaviateUnavailable(f"Weaviate at {url} answered but is not ready; retry when it has started")
    return client


def _is_auth_failure(error: BaseException | None) -> bool:
    while error is not None:
        if isinstance(error, weaviate.exceptions.AuthenticationFailedError):
            return True
        if isinstance(error, weaviate.exceptions.UnexpectedStatusCodeError) and error.status_code in (401, 403):
            return True
        error = error.__cause__ or error.__context__
    return False
