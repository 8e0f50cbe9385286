"""POST /batches: validate, store the requests, record the job, start the workflow."""

from aws_lambda_powertools.metrics import MetricUnit

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, json_response, make_resolver
from batch_gateway.edge.observability import metrics
from batch_gateway.service.create import create_job

app = make_resolver()


@app.post("/batches")
def create():
    job = create_job(wiring.services(), owner=caller(app.current_event), body=json_body(app.current_event))
    metrics.add_metric(name="JobsCreated", unit=MetricUnit.Count, value=1)
    metrics.add_metric(name="RequestsAccepted", unit=MetricUnit.Count, value=job.request_counts.total)
    return json_response(202, job.public())


handler = api_handler(app)
