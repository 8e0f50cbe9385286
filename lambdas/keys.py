"""POST /keys, GET /keys, DELETE /keys/{id}: gateway API keys (admin routes, IAM auth; decision 0045)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import json_body, json_response, make_resolver
from batch_gateway.edge.keys import key_request

app = make_resolver()


@app.post("/keys")
def create_key():
    owner, name = key_request(json_body(app.current_event, needs="owner"))
    return json_response(201, wiring.api_keys().create_key(owner, name), {"Cache-Control": "no-store"})


@app.get("/keys")
def list_keys():
    return json_response(200, wiring.api_keys().list_keys())


@app.delete("/keys/<key_id>")
def revoke_key(key_id: str):
    return json_response(200, wiring.api_keys().revoke_key(key_id))


handler = api_handler(app)
