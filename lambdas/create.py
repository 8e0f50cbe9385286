"""POST /batches: validate, store the requests, record the job, start the workflow; with ``"dry_run": true``,
validate the same way and answer the estimate (200), keeping and starting nothing."""

from aws_lambda_powertools.metrics import MetricUnit

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, json_response, make_resolver
from batch_gateway.edge.idempotency import idempotency_key, run_once
from batch_gateway.edge.observability import metrics
from batch_gateway.service.api.batches import create_job, estimate_job, is_dry_run
from batch_gateway.service.api.query import job_view

app = make_resolver()


@app.post("/batches")
def create():
    event = app.current_event
    services = wiring.services()
    owner = caller(event)
    key = idempotency_key(event.headers)
    body = json_body(
        event, needs="provider, model and requests (or input_file)"
    )  # validates content type, size and JSON before any key is recorded
    if is_dry_run(body):  # nothing is kept, so nothing to make idempotent
        estimate = estimate_job(services, owner, body)
        metrics.add_metric(name="DryRuns", unit=MetricUnit.Count, value=1)
        return json_response(200, estimate)

    def _create() -> dict:
        job = create_job(services, owner=owner, body=body)
        # JobsCreated and RequestsAccepted: counted for every creator by the job store's signals (events.signals)
        view = job_view(services, job)
        if job.webhook:  # the job's webhook secret: answered here only (decision 0070)
            view["webhook"] = {**view["webhook"], "secret": job.webhook.secret}
        return view

    view = (
        run_once(services.settings.table, owner, key, event.body or "", _create, app.lambda_context)
        if key
        else _create()
    )
    return json_response(202, view)


handler = api_handler(app)
