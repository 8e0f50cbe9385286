"""botocore's data parsed once per process instead of once per session.

A botocore session parses the JSON it needs (a service's model and endpoint rules, the partitions, the endpoints)
on its first client of each service, into a cache on its loader. Every new session starts over: a Lambda worker's
first clients, and the test process, which builds sessions again and again (each moto account, each handler's
wiring), spent a fifth of their CPU parsing the same files. ``share_parsed_data`` gives every loader made with
botocore's default search path one cache for the whole process, so each file is parsed once, as a second client of
one session finds what the first loaded. A loader with another search path (``AWS_DATA_PATH``) keeps a cache of its
own. The shared entries are what botocore computed with a boto3 session's search path (botocore's data, then boto3's,
which holds only resource definitions that only boto3 asks for), so a botocore-only session reads the same.

Development only: the local stack's Lambda zygote (``local/lambda_zygote.py``) and the test suite call it; the
service's own code never does.
"""

from __future__ import annotations

import os
from typing import Any

_PARTS = ("endpoints", "partitions", "sdk-default-configuration", "_retry")


def share_parsed_data(services: tuple[str, ...] = ()) -> None:
    """From now on every default-path loader of this process shares one cache; ``services``' models, their endpoint
    rules and the common data are parsed into it at once (before a fork), anything else on first use."""
    import boto3
    from botocore import loaders, session

    made_by_botocore = getattr(session.create_loader, "made_by_botocore", session.create_loader)
    first: Any = made_by_botocore()
    default_paths = list(first.search_paths)
    first.search_paths.append(os.path.join(os.path.dirname(boto3.__file__), "data"))  # as boto3.Session does
    for name in _PARTS:
        first.load_data_with_path(name)
    for service in services:
        for type_name in ("service-2", "endpoint-rule-set-1"):
            first.load_service_model(service, type_name, api_version=None)  # keyed as clients ask
    shared: dict[Any, Any] = first._cache  # where instance_cache keeps its results

    def create_loader(search_path_string: str | None = None) -> loaders.Loader:
        loader: loaders.Loader = made_by_botocore(search_path_string)
        if loader.search_paths == default_paths:
            loader._cache = shared  # type: ignore[attr-defined]  # where instance_cache keeps its results
        return loader

    create_loader.made_by_botocore = made_by_botocore  # type: ignore[attr-defined]  # a second call wraps botocore's
    session.create_loader = create_loader  # patching botocore: the name Session's data_loader component calls
