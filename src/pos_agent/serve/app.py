"""The proxy: an ASGI app (starlette) in front of any OpenAI-compatible server (httpx).

The routes are in routes.py, the proxy's state and the sessions' monitors in proxy.py, the
policies in policy.py and streamed answers in streaming.py.

The verdict is computed from the request's history before it is forwarded, so it is known
before a streamed answer starts. Fail open: when the monitor (or the belief model) raises, the
error is logged, the request goes on as it came, and `X-PoS-Error` says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.routing import Route

from pos_agent.serve.config import ServeConfig
from pos_agent.serve.proxy import Proxy
from pos_agent.serve.routes import Routes

__all__ = ["create_app"]

ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


def create_app(config: ServeConfig) -> Starlette:
    """The proxy as an ASGI app (serve it with uvicorn; `pos serve` does)."""
    proxy = Proxy(config)
    routes = Routes(proxy)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await proxy.start()
        try:
            yield
        finally:
            await proxy.stop()

    app = Starlette(
        routes=[
            Route("/pos/sessions", routes.sessions, methods=["GET"]),
            Route("/v1/chat/completions", routes.chat, methods=["POST"]),
            Route("/chat/completions", routes.chat, methods=["POST"]),
            Route("/v1/responses", routes.responses, methods=["POST"]),
            Route("/responses", routes.responses, methods=["POST"]),
            Route("/v1/messages", routes.messages, methods=["POST"]),
            Route("/messages", routes.messages, methods=["POST"]),
            Route("/{path:path}", routes.passthrough, methods=ALL_METHODS),
        ],
        lifespan=lifespan,
    )
    app.state.proxy = proxy
    return app
