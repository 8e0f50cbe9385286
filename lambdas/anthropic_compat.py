"""The Anthropic Message Batches door: ``/anthropic/v1/messages/batches`` (and the SDK's beta path, ``?beta=true``)."""

from batch_gateway import wiring
from batch_gateway.edge.anthropic_http import (
    PREFIX,
    anthropic_handler,
    anthropic_response,
    make_anthropic_resolver,
    request_headers,
    results_url_for,
)
from batch_gateway.edge.http import caller, json_body, query
from batch_gateway.edge.routing import Response
from batch_gateway.service.doors.anthropic import door as anthropic_door

app = make_anthropic_resolver()
BATCHES = f"{PREFIX}/messages/batches"


@app.post(BATCHES)
def create():
    event = app.current_event
    owner = caller(event)
    body = anthropic_door.create_batch(
        wiring.services(),
        owner=owner,
        body=json_body(event, needs="requests"),
        results_url=results_url_for(event),
        headers=request_headers(event),
    )
    return anthropic_response(200, body)


@app.get(BATCHES)
def list_batches():
    event = app.current_event
    return anthropic_response(
        200,
        anthropic_door.list_batches(
            wiring.services(),
            caller(event),
            results_url_for(event),
            limit=query(event, "limit"),
            after_id=query(event, "after_id"),
            before_id=query(event, "before_id"),
        ),
    )


@app.get(f"{BATCHES}/<batch_id>")
def retrieve(batch_id: str):
    event = app.current_event
    return anthropic_response(
        200, anthropic_door.get_batch(wiring.services(), batch_id, caller(event), results_url_for(event))
    )


@app.post(f"{BATCHES}/<batch_id>/cancel")
def cancel(batch_id: str):
    event = app.current_event
    return anthropic_response(
        200, anthropic_door.cancel_batch(wiring.services(), batch_id, caller(event), results_url_for(event))
    )


@app.get(f"{BATCHES}/<batch_id>/results")
def results(batch_id: str):
    url = anthropic_door.results_location(wiring.services(), batch_id, caller(app.current_event))
    return Response(status_code=302, headers={"Location": url}, body="")


@app.delete(f"{BATCHES}/<batch_id>")
def delete(batch_id: str):
    return anthropic_response(200, anthropic_door.delete_batch(wiring.services(), batch_id, caller(app.current_event)))


handler = anthropic_handler(app)
