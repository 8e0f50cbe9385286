"""GET /batches/{id}/results: results keyed by the caller's ids, a page at a time, or a presigned JSONL URL."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_response, make_resolver, query
from batch_gateway.service.api.query import get_results

app = make_resolver()


@app.get("/batches/<job_id>/results")
def results(job_id: str):
    event = app.current_event
    return json_response(
        200,
        get_results(
            wiring.services(),
            job_id,
            caller(event),
            limit=query(event, "limit"),
            next_token=query(event, "next_token"),
            fmt=query(event, "format"),
        ),
    )


handler = api_handler(app)
