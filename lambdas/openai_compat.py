"""The OpenAI-compatible door: ``/openai/v1/files``, ``/openai/v1/uploads`` and ``/openai/v1/batches``."""

from batch_gateway import wiring
from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.edge.entry import api_handler
from batch_gateway.edge.http import caller, json_body, query
from batch_gateway.edge.openai_http import PREFIX, make_openai_resolver, multipart_form, openai_response
from batch_gateway.edge.routing import Response
from batch_gateway.service.doors.openai import door as openai_door

app = make_openai_resolver()


@app.post(f"{PREFIX}/files")
def create_file():
    event = app.current_event
    owner = caller(event)
    form = multipart_form(event)
    if "file" not in form:
        raise InvalidRequestError("the form needs a 'file' part", details=[{"field": "file", "message": "required"}])
    filename, data = form["file"]
    purpose = form.get("purpose", (None, b""))[1].decode("utf-8", "replace")
    return openai_response(
        200,
        openai_door.create_file(
            wiring.services(), owner, purpose=purpose, filename=filename or "input.jsonl", data=data
        ),
    )


@app.get(f"{PREFIX}/files")
def list_files():
    event = app.current_event
    return openai_response(
        200,
        openai_door.list_files(
            wiring.services(),
            caller(event),
            purpose=query(event, "purpose"),
            after=query(event, "after"),
            limit=query(event, "limit"),
            order=query(event, "order"),
        ),
    )


@app.get(f"{PREFIX}/files/<file_id>")
def get_file(file_id: str):
    return openai_response(200, openai_door.get_file(wiring.services(), caller(app.current_event), file_id))


@app.delete(f"{PREFIX}/files/<file_id>")
def delete_file(file_id: str):
    return openai_response(200, openai_door.delete_file(wiring.services(), caller(app.current_event), file_id))


@app.get(f"{PREFIX}/files/<file_id>/content")
def file_content(file_id: str):
    url = openai_door.file_content_url(wiring.services(), caller(app.current_event), file_id)
    return Response(status_code=302, headers={"Location": url}, body="")


@app.post(f"{PREFIX}/uploads")
def create_upload():
    event = app.current_event
    return openai_response(
        200,
        openai_door.create_upload(wiring.services(), caller(event), json_body(event, needs=openai_door.UPLOAD_NEEDS)),
    )


@app.post(f"{PREFIX}/uploads/<upload_id>/parts")
def add_part(upload_id: str):
    event = app.current_event
    owner = caller(event)
    form = multipart_form(event)
    if "data" not in form:
        raise InvalidRequestError("the form needs a 'data' part", details=[{"field": "data", "message": "required"}])
    return openai_response(200, openai_door.add_upload_part(wiring.services(), owner, upload_id, form["data"][1]))


@app.post(f"{PREFIX}/uploads/<upload_id>/complete")
def complete_upload(upload_id: str):
    event = app.current_event
    owner = caller(event)
    return openai_response(
        200, openai_door.complete_upload(wiring.services(), owner, upload_id, json_body(event, needs="part_ids"))
    )


@app.post(f"{PREFIX}/uploads/<upload_id>/cancel")
def cancel_upload(upload_id: str):
    return openai_response(200, openai_door.cancel_upload(wiring.services(), caller(app.current_event), upload_id))


@app.post(f"{PREFIX}/batches")
def create_batch():
    event = app.current_event
    owner = caller(event)
    return openai_response(
        200, openai_door.create_batch(wiring.services(), owner, json_body(event, needs=openai_door.BATCH_NEEDS))
    )


@app.get(f"{PREFIX}/batches")
def list_batches():
    event = app.current_event
    return openai_response(
        200,
        openai_door.list_batches(
            wiring.services(), caller(event), after=query(event, "after"), limit=query(event, "limit")
        ),
    )


@app.get(f"{PREFIX}/batches/<batch_id>")
def get_batch(batch_id: str):
    return openai_response(200, openai_door.get_batch(wiring.services(), caller(app.current_event), batch_id))


@app.post(f"{PREFIX}/batches/<batch_id>/cancel")
def cancel_batch(batch_id: str):
    return openai_response(200, openai_door.cancel_batch(wiring.services(), caller(app.current_event), batch_id))


handler = api_handler(app)
