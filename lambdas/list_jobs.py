"""GET /batches: the caller's jobs, newest first, paginated, optionally by status."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_response, make_resolver, query
from batch_gateway.service.api.query import list_jobs

app = make_resolver()


@app.get("/batches")
def list_batches():
    event = app.current_event
    return json_response(
        200,
        list_jobs(
            wiring.services(),
            caller(event),
            status=query(event, "status"),
            limit=query(event, "limit"),
            next_token=query(event, "next_token"),
        ),
    )


handler = api_handler(app)
