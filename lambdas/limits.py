"""Per-owner limits on creates (decision 0119): POST /limits, GET /limits, DELETE /limits?owner= (admin routes, IAM
auth like /budgets) and GET /limit (the caller's own)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, json_response, make_resolver, query
from batch_gateway.service.api import limits

app = make_resolver()


@app.post("/limits")
def set_limits():
    return json_response(
        200, limits.set_limits(wiring.services(), json_body(app.current_event, needs="owner and the limits to set"))
    )


@app.get("/limits")
def list_limits():
    return json_response(200, limits.list_limits(wiring.services()))


@app.delete("/limits")
def remove_limits():
    return json_response(200, limits.remove_limits(wiring.services(), query(app.current_event, "owner")))


@app.get("/limit")
def own_limits():
    return json_response(200, limits.own_limits(wiring.services(), caller(app.current_event)))


handler = api_handler(app)
