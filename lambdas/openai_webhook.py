"""POST /providers/openai/webhook: OpenAI's signed batch events wake the job's workflow (decision 0073). No IAM auth:
the Standard Webhooks signature with the project webhook's secret is the authentication."""

import base64

from batch_gateway import constants, wiring
from batch_gateway.contract.errors import PayloadTooLargeError
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import json_response, make_resolver
from batch_gateway.service.inbound.provider_push import receive_openai_event

app = make_resolver()


@app.post(constants.OPENAI_WEBHOOK_PATH)
def openai_webhook():
    event = app.current_event
    raw = event.body or ""
    if len(raw) > 2 * constants.OPENAI_WEBHOOK_MAX_BYTES:  # refused before decoding anything
        raise PayloadTooLargeError(f"a webhook body is at most {constants.OPENAI_WEBHOOK_MAX_BYTES} bytes")
    body = base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8", "surrogatepass")
    return json_response(200, receive_openai_event(wiring.services(), body, event.headers or {}))


handler = api_handler(app)
