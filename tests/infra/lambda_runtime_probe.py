"""Run inside a Lambda asset as the Python runtime runs a function: ``python -I -S lambda_runtime_probe.py ASSET
RUNTIME_LIBS HANDLER...``, standard library only until the paths are set.

``sys.path`` is the function's code folder first, then the runtime's own libraries (where the Lambda runtime keeps
its boto3 and botocore), then the standard library, as in Lambda. The probe imports every handler, then reports as
JSON on stdout: which copy of the AWS SDK and its dependencies got loaded, and whether that SDK accepts the calls
our code makes that older botocore releases do not know (S3 conditional writes, Bedrock batch inference). The calls
go to botocore Stubbers with fake credentials: parameter validation runs, nothing is sent.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from typing import Any

SDK_MODULES = ("boto3", "botocore", "s3transfer", "urllib3", "dateutil", "jmespath", "six")


def _outcome(call: Callable[[], object]) -> str:
    try:
        call()
    except Exception as error:  # reported, so the test shows every check that fails, not only the first
        return f"{type(error).__name__}: {' '.join(str(error).split())}"[:200]
    return "ok"


def _import_handler(handler: str) -> None:
    module_name, function_name = handler.rsplit(".", 1)
    if not callable(getattr(importlib.import_module(module_name), function_name)):
        raise TypeError(f"{handler} is not callable")


def _sdk_origins() -> dict[str, dict[str, str]]:
    origins = {}
    for name in SDK_MODULES:
        module = importlib.import_module(name)
        origins[name] = {"file": str(module.__file__), "version": str(getattr(module, "__version__", ""))}
    return origins


def _calls() -> dict[str, Callable[[], object]]:
    import boto3
    from botocore.stub import Stubber

    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
    s3, bedrock = session.client("s3"), session.client("bedrock")

    def s3_call(method: str, **params: Any) -> Callable[[], object]:
        def call() -> object:
            with Stubber(s3) as stubber:
                stubber.add_response(method, {}, {"Bucket": "b", "Key": "k", **params})
                return getattr(s3, method)(Bucket="b", Key="k", **params)

        return call

    upload = {"UploadId": "u", "MultipartUpload": {"Parts": [{"ETag": '"e"', "PartNumber": 1}]}}

    def create_invocation_job() -> object:
        job = {  # the parameters providers/bedrock.py sends
            "jobName": "j",
            "roleArn": "arn:aws:iam::123456789012:role/r",
            "clientRequestToken": "t",
            "modelId": "m",
            "inputDataConfig": {"s3InputDataConfig": {"s3InputFormat": "JSONL", "s3Uri": "s3://b/in.jsonl"}},
            "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": "s3://b/out/"}},
            "timeoutDurationInHours": 24,
        }
        with Stubber(bedrock) as stubber:
            arn = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/j"
            stubber.add_response("create_model_invocation_job", {"jobArn": arn}, job)
            return bedrock.create_model_invocation_job(**job)

    def invocation_job_call(method: str) -> Callable[[], object]:
        def call() -> object:
            with Stubber(bedrock) as stubber:  # an error answer: the request still has to pass validation
                stubber.add_client_error(method, "ResourceNotFoundException", expected_params={"jobIdentifier": "j"})
                try:
                    return getattr(bedrock, method)(jobIdentifier="j")
                except bedrock.exceptions.ResourceNotFoundException:
                    return None

        return call

    return {
        "s3.put_object(IfNoneMatch)": s3_call("put_object", Body=b"x", IfNoneMatch="*"),
        "s3.put_object(IfMatch)": s3_call("put_object", Body=b"x", IfMatch='"e"'),
        "s3.complete_multipart_upload(IfNoneMatch)": s3_call("complete_multipart_upload", **upload, IfNoneMatch="*"),
        "s3.complete_multipart_upload(IfMatch)": s3_call("complete_multipart_upload", **upload, IfMatch='"e"'),
        "bedrock.create_model_invocation_job": create_invocation_job,
        "bedrock.get_model_invocation_job": invocation_job_call("get_model_invocation_job"),
        "bedrock.stop_model_invocation_job": invocation_job_call("stop_model_invocation_job"),
    }


def main(asset: str, runtime_libs: str, handlers: list[str]) -> dict[str, Any]:
    sys.path[:0] = [asset, runtime_libs]
    report: dict[str, Any] = {
        "handlers": {handler: _outcome(lambda h=handler: _import_handler(h)) for handler in handlers}
    }
    report["sdk"] = _sdk_origins()
    report["calls"] = {name: _outcome(call) for name, call in _calls().items()}
    return report


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3:])))
