"""GET /batches/{id}: the job, its counts, chunks, usage and cost."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_response, make_resolver
from batch_gateway.service.api.query import get_job

app = make_resolver()


@app.get("/batches/<job_id>")
def status(job_id: str):
    return json_response(200, get_job(wiring.services(), job_id, caller(app.current_event)))


handler = api_handler(app)
