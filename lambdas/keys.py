"""POST /keys, GET /keys, DELETE /keys/{id}: gateway API keys (admin routes; decisions 0045, 0134).

IAM admins call them with SigV4; under the key mount an admin key may too (the authorizer denies other keys), but
only SigV4 may mint an admin key.
"""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import by_gateway_key, caller, json_body, json_response, make_resolver
from batch_gateway.edge.keys import key_request

app = make_resolver()


@app.post("/keys")
def create_key():
    caller(app.current_event)  # refuses an unsigned request, and a key over its rate (429)
    body = json_body(app.current_event, needs="owner")
    owner, name, admin = key_request(body, by_key=by_gateway_key(app.current_event))
    return json_response(201, wiring.api_keys().create_key(owner, name, admin), {"Cache-Control": "no-store"})


@app.get("/keys")
def list_keys():
    caller(app.current_event)
    return json_response(200, wiring.api_keys().list_keys())


@app.delete("/keys/<key_id>")
def revoke_key(key_id: str):
    caller(app.current_event)
    return json_response(200, wiring.api_keys().revoke_key(key_id))


handler = api_handler(app)
