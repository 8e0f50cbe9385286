"""POST /batches/{id}/cancel: mark the job canceling; finished items are still collected."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_response, make_resolver
from batch_gateway.service.api.cancel import cancel_job

app = make_resolver()


@app.post("/batches/<job_id>/cancel")
def cancel(job_id: str):
    return json_response(202, cancel_job(wiring.services(), job_id, caller(app.current_event)))


handler = api_handler(app)
