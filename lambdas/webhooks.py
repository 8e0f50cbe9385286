"""Webhook subscriptions (decision 0070): POST /webhooks, GET /webhooks, GET/DELETE /webhooks/{id} and
POST /webhooks/{id}/rotate-secret, each the caller's own. A secret is answered by create and rotate only."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, json_response, make_resolver
from batch_gateway.service.api import webhooks

app = make_resolver()
NO_STORE = {"Cache-Control": "no-store"}


@app.post("/webhooks")
def create_subscription():
    owner = caller(app.current_event)
    body = json_body(app.current_event, needs="url and events")
    return json_response(201, webhooks.create_subscription(wiring.services(), owner, body), NO_STORE)


@app.get("/webhooks")
def list_subscriptions():
    return json_response(200, webhooks.list_subscriptions(wiring.services(), caller(app.current_event)))


@app.get("/webhooks/<subscription_id>")
def get_subscription(subscription_id: str):
    owner = caller(app.current_event)
    return json_response(200, webhooks.get_subscription(wiring.services(), owner, subscription_id))


@app.delete("/webhooks/<subscription_id>")
def delete_subscription(subscription_id: str):
    owner = caller(app.current_event)
    return json_response(200, webhooks.delete_subscription(wiring.services(), owner, subscription_id))


@app.post("/webhooks/<subscription_id>/rotate-secret")
def rotate_secret(subscription_id: str):
    owner = caller(app.current_event)
    return json_response(200, webhooks.rotate_secret(wiring.services(), owner, subscription_id), NO_STORE)


handler = api_handler(app)
