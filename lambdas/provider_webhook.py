"""POST /providers/<provider>/webhook: a provider's signed batch events wake the job's workflow (decisions 0073, 0135;
OpenAI's and Gemini's, ``provider_specs.WEBHOOK_PUSH``). No IAM auth: the Standard Webhooks signature with the
webhook's secret is the authentication. Each provider has its own function, which can read only its own secret."""

import base64

from batch_gateway import constants, wiring
from batch_gateway.contract.errors import PayloadTooLargeError
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import json_response, make_resolver
from batch_gateway.service.inbound.provider_push import receive_webhook

app = make_resolver()


@app.post("/providers/<provider>/webhook")
def provider_webhook(provider: str):
    event = app.current_event
    raw = event.body or ""
    if len(raw) > 2 * constants.WEBHOOK_MAX_BYTES:  # refused before decoding anything
        raise PayloadTooLargeError(f"a webhook body is at most {constants.WEBHOOK_MAX_BYTES} bytes")
    body = base64.b64decode(raw) if event.is_base64_encoded else raw.encode("utf-8", "surrogatepass")
    return json_response(200, receive_webhook(wiring.services(), provider, body, event.headers or {}))


handler = api_handler(app)
