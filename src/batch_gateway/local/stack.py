"""``LocalStack``: the whole service on one machine.

moto's server (S3, DynamoDB, Step Functions, Lambda, Secrets Manager, EventBridge) on loopback, the state machine
and functions taken from the synthesized template, Lambda tasks running the real handlers in this process, the
local API front, and the provider simulators unless a real API key is in the environment.
"""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import sys
import threading
import warnings
import zipfile
from typing import Any

import boto3
import requests

from batch_gateway.local import lambda_runtime
from batch_gateway.local.front import ApiFront
from batch_gateway.local.resources import create_bucket, create_table
from batch_gateway.local.template import REPO_ROOT, Template, resolve, synthesized_template

REGION = "us-east-1"
ACCOUNT = "123456789012"
LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local"}
DROP_FOLDER_OWNER = f"arn:aws:iam::{ACCOUNT}:user/DROPFOLDER"  # sign with access key DROPFOLDER to list its jobs
PROVIDER_KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}


def _empty_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "runs in-process: see batch_gateway.local.lambda_runtime")
    return buffer.getvalue()


class LocalStack:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, poll_schedule: str = "1,1,2,2,3,5",
                 processing_seconds: float = 2.0, use_simulators: bool | None = None,
                 context: dict[str, Any] | None = None, quiet: bool = False) -> None:
        self.host, self.port = host, port
        self.poll_schedule = poll_schedule
        self.processing_seconds = processing_seconds
        keys = {p: os.environ.get(v) for p, v in PROVIDER_KEY_VARS.items()}
        self.use_simulators = use_simulators if use_simulators is not None else not any(keys.values())
        self._provider_keys = keys
        self.context = {"poll_schedule": poll_schedule, "drop_folder_owner": DROP_FOLDER_OWNER, **(context or {})}
        self.table = "batch-gateway-jobs"
        self.bucket = "batch-gateway-payloads"
        self._moto: Any = None
        self.simulator: Any = None
        self.front: ApiFront | None = None
        self.state_machine_arn = ""
        self._saved_env: dict[str, str | None] = {}
        self.quiet = quiet  # warnings and errors only, no metrics lines: for people watching a terminal

    # --- lifecycle ----------------------------------------------------------------------------------------------

    def start(self) -> LocalStack:
        from moto.server import ThreadedMotoServer

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access log
        # S3's test event reaches the ingest function with no records, so no metrics: not worth a warning here.
        warnings.filterwarnings("ignore", message="No application metrics to publish")

        if str(REPO_ROOT) not in sys.path:
            sys.path.insert(0, str(REPO_ROOT))  # the handlers live in lambdas/
        template = Template(synthesized_template(self.context))
        self._moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.aws_endpoint_url = f"http://{host}:{port}"
        requests.post(f"{self.aws_endpoint_url}/moto-api/config",
                      json={"stepfunctions": {"execute_state_machine": True}}, timeout=10).raise_for_status()
        self._set_env({**LOCAL_CREDENTIALS, "AWS_ENDPOINT_URL": self.aws_endpoint_url, "MOTO_PORT": str(port),
                       "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION, "POWERTOOLS_TRACE_DISABLED": "1"})
        lambda_runtime.install()

        if self.use_simulators:
            from batch_gateway.simulators import SimulatorServer

            self.simulator = SimulatorServer(processing_seconds=self.processing_seconds).start()
            self._set_env({"ANTHROPIC_BASE_URL": self.simulator.url, "OPENAI_BASE_URL": self.simulator.openai_base_url})

        self._create_resources(template)
        from batch_gateway import wiring

        wiring.reset()
        self.front = ApiFront(template.routes(), {f.logical_id: f.handler for f in template.functions()},
                              self.host, self.port).start()
        return self

    def stop(self) -> None:
        if self.front:
            self.front.stop()
        if self.simulator:
            self.simulator.stop()
        if self._moto:
            self._moto.stop()
        lambda_runtime.uninstall()
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        from batch_gateway import wiring

        wiring.reset()

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def info(self) -> dict[str, Any]:
        return {
            "api_url": self.front.url if self.front else None,
            "aws_endpoint_url": self.aws_endpoint_url,
            "region": REGION,
            "bucket": self.bucket,
            "table": self.table,
            "state_machine_arn": self.state_machine_arn,
            "simulator_url": self.simulator.url if self.simulator else None,
            "drop_folder": f"s3://{self.bucket}/{self.context.get('drop_folder_prefix', 'inbox/')}",
            "drop_folder_owner": self.context["drop_folder_owner"],
        }

    def client(self, service: str) -> Any:
        return boto3.client(service, endpoint_url=self.aws_endpoint_url, region_name=REGION,
                            aws_access_key_id="local", aws_secret_access_key="local")

    # --- resources ----------------------------------------------------------------------------------------------

    def _set_env(self, values: dict[str, str]) -> None:
        for key, value in values.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def _create_resources(self, template: Template) -> None:
        refs: dict[str, str] = {}
        attrs: dict[tuple[str, str], str] = {}
        pseudo = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
                  "AWS::URLSuffix": "amazonaws.com", "AWS::StackName": "BatchGatewayStack"}
        for logical_id in template.of_type("AWS::DynamoDB::Table"):
            refs[logical_id] = self.table
            attrs[(logical_id, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.table}"
        create_table(self.client("dynamodb"), self.table)
        create_bucket(self.client("s3"), self.bucket, REGION)
        for logical_id in template.of_type("AWS::S3::Bucket"):
            name = self.bucket if "PayloadBucket" in logical_id else f"batch-gateway-{logical_id.lower()[:40]}"
            refs[logical_id] = name
            attrs[(logical_id, "Arn")] = f"arn:aws:s3:::{name}"
        secrets = self.client("secretsmanager")
        for logical_id, secret in template.of_type("AWS::SecretsManager::Secret").items():
            name = secret["Properties"].get("Name") or logical_id
            provider = next((p for p in PROVIDER_KEY_VARS if p in str(name).lower()), None)
            value = (self._provider_keys.get(provider) if provider else None) or "simulator-key"
            refs[logical_id] = secrets.create_secret(Name=str(name), SecretString=value)["ARN"]
        role = self.client("iam").create_role(
            RoleName="batch-gateway-local", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17",
                                                                                "Statement": []}),
        )["Role"]["Arn"]
        functions = template.functions()
        for function in functions:
            refs[function.logical_id] = function.logical_id
            attrs[(function.logical_id, "Arn")] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function.logical_id}"
        machine_id, definition = template.state_machine()
        self.state_machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:batch-gateway-workflow"
        refs[machine_id] = self.state_machine_arn
        attrs[(machine_id, "Name")] = "batch-gateway-workflow"

        sqs = self.client("sqs")
        queues = template.of_type("AWS::SQS::Queue")
        for logical_id in sorted(queues, key=lambda q: "RedrivePolicy" in queues[q]["Properties"]):  # DLQs first
            props = queues[logical_id]["Properties"]
            attributes = {}
            if "RedrivePolicy" in props:
                attributes["RedrivePolicy"] = json.dumps(resolve(props["RedrivePolicy"], refs, attrs, pseudo))
            url = sqs.create_queue(QueueName=logical_id, Attributes=attributes)["QueueUrl"]
            refs[logical_id] = url
            attrs[(logical_id, "Arn")] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{logical_id}"

        env: dict[str, str] = {}
        lam = self.client("lambda")
        for function in functions:
            variables = {k: str(resolve(v, refs, attrs, pseudo)) for k, v in function.environment.items()}
            env.update(variables)
            lam.create_function(
                FunctionName=function.logical_id, Runtime="python3.13", Role=role, Handler=function.handler,
                Code={"ZipFile": _empty_zip()}, Timeout=900, MemorySize=1024,
                Environment={"Variables": variables},
            )
        for mapping in template.of_type("AWS::Lambda::EventSourceMapping").values():
            props = resolve(mapping["Properties"], refs, attrs, pseudo)
            lam.create_event_source_mapping(
                EventSourceArn=props["EventSourceArn"], FunctionName=props["FunctionName"],
                BatchSize=int(props.get("BatchSize", 10)), FunctionResponseTypes=props.get("FunctionResponseTypes", []),
            )
        for notifications in template.of_type("Custom::S3BucketNotifications").values():
            config = resolve(notifications["Properties"]["NotificationConfiguration"], refs, attrs, pseudo)
            self.client("s3").put_bucket_notification_configuration(
                Bucket=self.bucket, NotificationConfiguration=config)
        resolved = resolve(definition, refs, attrs, pseudo)
        self.client("stepfunctions").create_state_machine(
            name="batch-gateway-workflow", definition=resolved if isinstance(resolved, str) else json.dumps(resolved),
            roleArn=role, type="STANDARD",
        )
        # One process runs every handler, so they share one environment: the union of the functions' variables.
        if self.quiet:
            env.update(POWERTOOLS_LOG_LEVEL="WARNING", POWERTOOLS_METRICS_DISABLED="true")
        self._set_env(env)


def serve(host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
    """``batch-gateway local``: start, print one JSON line with the addresses, serve until interrupted."""
    stack = LocalStack(host, port, **options).start()
    print(json.dumps(stack.info()), flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        stopped.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
