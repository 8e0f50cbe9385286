"""API Gateway REST (proxy v1) routing for the API functions: the part of Powertools' ``APIGatewayRestResolver``
they use, with its answers byte for byte (decision 0106).

Importing anything from ``aws_lambda_powertools.event_handler`` runs that package's ``__init__``, which imports every
resolver (AppSync's with ``asyncio``) and, through ``utilities.data_classes``' ``__init__``, every event data class:
about a fifth of the cold-import floor of Powertools + boto3, in every API function. The API functions use routes with
``<name>`` parameters, exception handlers, a not-found handler, ``Response`` and the request's headers, query, body,
path and request context; this module is that, as Powertools does it:

- a route's rule loses a trailing ``/``; it matches the whole path, one or more ``/`` after it allowed, and a
  ``<name>`` matches a run of word characters and ``-._~()'!*:@,;=+&$%<> []{}|^`` (Powertools' pattern);
- static routes are tried before dynamic ones, each in the order registered; the method must match exactly;
- an exception raised by a route (or by the not-found handler) goes to the handler registered for the first class
  of its MRO that has one; with none, it propagates;
- no route: the handler registered with ``not_found`` is called with ``RouteNotFoundError()``; without one, 404
  ``{"statusCode":404,"message":"Not found"}``;
- a route's dict is a 200 JSON answer, a ``(dict, status)`` pair that status; a ``Response`` is sent as it is;
- the answer is ``{"statusCode", "body", "isBase64Encoded", "multiValueHeaders"}``: a JSON ``Response`` whose body is
  not a string is serialized first, a bytes body is sent base64-encoded, every header becomes a list of values.

Not carried over, since no function uses them: CORS, compression, cache-control per route, middlewares, OpenAPI
validation, ``Depends``, cookies, and ``POWERTOOLS_DEV``'s debug printing. ``tests/unit/test_routing.py`` holds this
module to Powertools' resolver on the same routes and requests.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

Handler = TypeVar("Handler", bound=Callable[..., Any])

# Powertools' route pattern (event_handler/api_gateway.py: _DYNAMIC_ROUTE_PATTERN, _NAMED_GROUP_BOUNDARY_PATTERN)
_DYNAMIC_ROUTE = re.compile(r"(<\w+>)")
_SAFE_URI = "-._~()'!*:@,;=+&$"
_UNSAFE_URI = r"%<> \[\]{}|^"
_PARAMETER = rf"(?P\1[{_SAFE_URI}{_UNSAFE_URI}\\w]+)"
_JSON = "application/json"


def _compact_json(body: Any) -> str:
    return json.dumps(body, separators=(",", ":"))


class Headers(dict[str, Any]):
    """A request's headers, looked up in any case (Powertools' ``CaseInsensitiveDict``): keys are kept lower case."""

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        super().__init__((key.lower(), value) for key, value in (data or {}).items())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


class _View(Mapping[str, Any]):
    """A read-only view of one part of the event (Powertools' ``DictWrapper``)."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: object, default: Any = None) -> Any:
        return self._data.get(str(key), default)

    @property
    def raw_event(self) -> dict[str, Any]:
        return self._data


class Identity(_View):
    __slots__ = ()

    @property
    def user_arn(self) -> str | None:
        value: str | None = self.get("userArn")
        return value

    @property
    def caller(self) -> str | None:
        value: str | None = self.get("caller")
        return value


class RequestContext(_View):
    __slots__ = ()

    @property
    def identity(self) -> Identity:
        return Identity(self["identity"])

    @property
    def path(self) -> str:
        return str(self["path"])

    @property
    def stage(self) -> str:
        return str(self["stage"])

    @property
    def request_id(self) -> str:
        return str(self["requestId"])


class ApiEvent(_View):
    """An API Gateway REST proxy event (Powertools' ``APIGatewayProxyEvent``: the same names, the same answers)."""

    __slots__ = ()

    @property
    def headers(self) -> dict[str, str]:  # a Headers, as Powertools' event annotates its own
        return Headers(self.get("headers"))

    @property
    def query_string_parameters(self) -> dict[str, str]:
        return self.get("queryStringParameters") or {}

    @property
    def path_parameters(self) -> dict[str, str]:
        return self.get("pathParameters") or {}

    @property
    def body(self) -> str | None:
        value: str | None = self.get("body")
        return value

    @property
    def is_base64_encoded(self) -> bool | None:
        value: bool | None = self.get("isBase64Encoded")
        return value

    @property
    def path(self) -> str:
        return str(self["path"])

    @property
    def http_method(self) -> str:
        return str(self["httpMethod"])

    @property
    def request_context(self) -> RequestContext:
        return RequestContext(self["requestContext"])


class RouteNotFoundError(Exception):
    """What the not-found handler is called with (Powertools calls it with its ``NotFoundError()``)."""


class Response:
    """An answer: ``content_type`` becomes the ``Content-Type`` header unless ``headers`` has one; a bytes body is sent
    base64-encoded."""

    __slots__ = ("body", "headers", "status_code")

    def __init__(
        self,
        status_code: int,
        content_type: str | None = None,
        body: Any = None,
        headers: Mapping[str, str | list[str]] | None = None,
    ) -> None:
        self.status_code = status_code
        self.body = body
        self.headers: dict[str, str | list[str]] = dict(headers) if headers else {}
        if content_type:
            self.headers.setdefault("Content-Type", content_type)

    def is_json(self) -> bool:
        content_type = self.headers.get("Content-Type", "")
        if isinstance(content_type, list):
            content_type = content_type[0]
        return content_type.startswith(_JSON)


class _Route:
    __slots__ = ("func", "method", "path", "rule")

    def __init__(self, method: str, rule: str, func: Callable[..., Any]) -> None:
        self.method = method.upper()
        self.path = rule
        self.rule = re.compile("^{}/*$".format(_DYNAMIC_ROUTE.sub(_PARAMETER, rule.rstrip("/"))))
        self.func = func


class RestResolver:
    """Routes an API Gateway REST proxy event to the function registered for its method and path."""

    def __init__(self, serializer: Callable[[Any], str] | None = None) -> None:
        self._serializer = serializer or _compact_json
        self._static: list[_Route] = []
        self._dynamic: list[_Route] = []
        self._exception_handlers: dict[type[BaseException], Callable[[Any], Any]] = {}
        self.current_event: ApiEvent = ApiEvent({})
        self.lambda_context: Any = None

    def route(self, rule: str, method: str) -> Callable[[Handler], Handler]:
        def register(func: Handler) -> Handler:
            route = _Route(method, rule, func)
            (self._dynamic if route.rule.groups else self._static).append(route)
            return func

        return register

    def get(self, rule: str) -> Callable[[Handler], Handler]:
        return self.route(rule, "GET")

    def post(self, rule: str) -> Callable[[Handler], Handler]:
        return self.route(rule, "POST")

    def put(self, rule: str) -> Callable[[Handler], Handler]:
        return self.route(rule, "PUT")

    def delete(self, rule: str) -> Callable[[Handler], Handler]:
        return self.route(rule, "DELETE")

    def exception_handler(self, exc_class: type[BaseException]) -> Callable[[Handler], Handler]:
        def register(func: Handler) -> Handler:
            self._exception_handlers[exc_class] = func
            return func

        return register

    def not_found(self, func: Handler) -> Handler:
        return self.exception_handler(RouteNotFoundError)(func)

    def routes(self) -> list[tuple[str, str]]:
        """(method, rule) of every route, in the order they are tried."""
        return [(route.method, route.path) for route in self._static + self._dynamic]

    def resolve(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        self.current_event = current = ApiEvent(event)
        self.lambda_context = context
        method = current.http_method.upper()
        path = current.path
        for route in self._static + self._dynamic:
            if route.method == method and (match := route.rule.match(path)):
                return self._answer(route.func, match.groupdict())
        return self._answer(self._not_found, {})

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self.resolve(event, context)

    def _not_found(self) -> Any:
        handler = self._handler_for(RouteNotFoundError)
        if handler is not None:
            return handler(RouteNotFoundError())
        return Response(404, _JSON, {"statusCode": 404, "message": "Not found"})

    def _handler_for(self, exc_type: type[BaseException]) -> Callable[[Any], Any] | None:
        for cls in exc_type.__mro__:
            if cls in self._exception_handlers:
                return self._exception_handlers[cls]
        return None

    def _answer(self, func: Callable[..., Any], arguments: dict[str, str]) -> dict[str, Any]:
        try:
            response = _to_response(func(**arguments))
        except Exception as exc:
            handler = self._handler_for(type(exc))
            if handler is None:
                raise
            response = handler(exc)
        return self._build(response)

    def _build(self, response: Response) -> dict[str, Any]:
        body = response.body
        if response.is_json() and not isinstance(body, str):
            body = self._serializer(body)
        encoded = isinstance(body, bytes)
        if encoded:
            body = base64.b64encode(body).decode()
        headers: dict[str, list[str]] = {}
        for key, values in response.headers.items():
            if values is not None:
                headers.setdefault(key, []).extend([values] if isinstance(values, str) else values)
        return {
            "statusCode": response.status_code,
            "body": body,
            "isBase64Encoded": encoded,
            "multiValueHeaders": headers,
        }


def _to_response(result: Any) -> Response:
    if isinstance(result, Response):
        return result
    status = 200
    if isinstance(result, tuple) and len(result) == 2:
        result, status = result
    return Response(status, _JSON, result)
