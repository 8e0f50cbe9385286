"""The API functions' bundle carries no provider SDK: their handlers must not import them (a Lambda
would fail at its first cold start), nor pydantic or the X-Ray SDK, which would double their cold-start import."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from batch_gateway import constants

REPO = Path(__file__).resolve().parents[2]
API_BUNDLE_HANDLERS = [
    *constants.API_HANDLERS.values(),
    constants.INGEST_HANDLER,
    constants.PARK_HANDLER,
    constants.OPENAI_WEBHOOK_HANDLER,
]
NOT_IN_API_BUNDLE = {"anthropic", "openai", "httpx2"}
NOT_ON_API_PATH = {"pydantic", "aws_xray_sdk"}


@pytest.mark.parametrize("handler", API_BUNDLE_HANDLERS)
def test_api_bundle_handlers_import_only_what_their_bundle_carries(handler):
    module = handler.rsplit(".", 1)[0]
    code = f"import sys, json, {module}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert not loaded & NOT_IN_API_BUNDLE
    if handler in (*constants.API_HANDLERS.values(), constants.OPENAI_WEBHOOK_HANDLER):
        assert not loaded & NOT_ON_API_PATH
