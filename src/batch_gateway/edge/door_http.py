"""What both compatible doors' HTTP edges share: a resolver whose every answer that is not a success (a known
error, a path the door does not serve, an unexpected failure) is in the door's own error shape."""

from __future__ import annotations

from collections.abc import Callable

from batch_gateway.contract.errors import BatchGatewayError, NotFoundError
from batch_gateway.edge.observability import logger
from batch_gateway.edge.routing import Response, RestResolver, RouteNotFoundError


def door_resolver(render: Callable[[BatchGatewayError], Response], serves: str) -> RestResolver:
    """``render`` answers an error in the door's shape; ``serves`` says, in a 404, which routes the door has."""
    app = RestResolver()

    @app.exception_handler(BatchGatewayError)
    def _known(error: BatchGatewayError) -> Response:
        if error.http_status >= 500:
            logger.warning("request failed", extra={"error_type": error.type})
        return render(error)

    @app.not_found
    def _no_route(_: RouteNotFoundError) -> Response:
        return render(NotFoundError(serves))

    @app.exception_handler(Exception)
    def _unknown(error: Exception) -> Response:
        logger.exception("unhandled error")
        return render(BatchGatewayError("internal error; the request id is in the logs"))

    return app
