"""What every request passes first: bearer-token authentication, the body-size limit, and the guarantee
that any failure leaves as a Kubernetes ``Status`` (an unexpected exception is logged and becomes a 500
``InternalError`` Status; the server keeps serving)."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from mockgpu.control.apiserver import protobuf
from mockgpu.control.apiserver import status as st
from mockgpu.control.apiserver.limits import MAX_BODY_BYTES, too_large

log = logging.getLogger("mockgpu.apiserver")

#: health endpoints answer without a token (upstream lets system:unauthenticated read them).
PUBLIC_PATHS = frozenset({"/healthz", "/readyz", "/livez"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def status_response(err: st.StatusError) -> web.Response:
    """The error's Status: JSON, or protobuf for a client that prefers it (``protobuf.negotiate``)."""
    return protobuf.response(err.status, err.code) or web.Response(
        body=json.dumps(err.status).encode(), status=err.code, content_type="application/json")


def guard(token: str) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """The middleware: 401 without the cluster's token, 413 over the body limit, Status for every error."""
    expected = f"Bearer {token}".encode()

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            if request.path not in PUBLIC_PATHS:
                given = request.headers.get("Authorization", "").encode("utf-8", "replace")
                if not hmac.compare_digest(given, expected):
                    raise st.unauthorized()
            if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
                raise too_large()
            if request.method == "CONNECT":  # no route matches its authority-form target; upstream: 405
                raise st.method_not_allowed()
            return await handler(request)
        except st.StatusError as err:
            return status_response(err)
        except web.HTTPRequestEntityTooLarge:
            return status_response(too_large())
        except web.HTTPException as exc:  # aiohttp's own (e.g. a malformed request line)
            return status_response(st.StatusError({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": exc.reason or "error", "reason": "BadRequest" if exc.status < 500 else "InternalError",
                "code": exc.status}))
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as exc:  # a bug: answer 500 as upstream does, keep serving, keep the traceback
            log.exception("unexpected error serving %s %s", request.method, request.path_qs)
            return status_response(st.internal_error(f"{type(exc).__name__}: {exc}"))

    return middleware
