"""POST /uploads: presigned S3 URLs for one input file, used by POST /batches {"input_file": ...}."""

from batch_gateway import wiring
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, json_response, make_resolver
from batch_gateway.service.api.uploads import create_upload

app = make_resolver()


@app.post("/uploads")
def upload():
    event = app.current_event
    return json_response(
        201, create_upload(wiring.services(), owner=caller(event), body=json_body(event, needs="size"))
    )


handler = api_handler(app)
