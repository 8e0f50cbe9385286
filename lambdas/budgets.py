"""Monthly budgets (decision 0064): POST /budgets, GET /budgets, DELETE /budgets?owner= (admin routes, IAM auth like
/keys) and GET /budget (the caller's own)."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, json_response, make_resolver, query
from batch_gateway.service.api import budgets

app = make_resolver()


@app.post("/budgets")
def set_budget():
    return json_response(
        200, budgets.set_budget(wiring.services(), json_body(app.current_event, needs="owner and monthly_usd"))
    )


@app.get("/budgets")
def list_budgets():
    return json_response(200, budgets.list_budgets(wiring.services()))


@app.delete("/budgets")
def remove_budget():
    return json_response(200, budgets.remove_budget(wiring.services(), query(app.current_event, "owner")))


@app.get("/budget")
def own_budget():
    return json_response(200, budgets.own_budget(wiring.services(), caller(app.current_event)))


handler = api_handler(app)
