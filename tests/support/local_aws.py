"""The local AWS process for tests: moto's server in a process of its own (``batch_gateway_dev.local.aws_server``,
what the local stack runs), for tests that need IAM enforced or a real HTTP endpoint. One place starts and stops it
and makes IAM users with keys; the Bedrock account on top of it is ``tests/support/bedrock_account.py``.

IAM is enforced only once ``enforce_iam()`` is called (moto's ``reset-auth``): before that, the admin keys set the
account up; after it, every call must be signed by a user or role allowed to make it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from tests.support.fixtures import REGION

REPO_ROOT = Path(__file__).resolve().parents[2]
ALLOW_ALL = {"Effect": "Allow", "Action": "*", "Resource": "*"}


def policy(*statements: dict[str, Any]) -> str:
    """An IAM policy document holding ``statements``."""
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


@dataclass(frozen=True)
class LocalAws:
    endpoint: str

    @property
    def admin(self) -> dict[str, str]:
        """boto3 keyword arguments for the account's setup (any keys do before ``enforce_iam()``)."""
        return {
            "endpoint_url": self.endpoint,
            "region_name": REGION,
            "aws_access_key_id": "admin",
            "aws_secret_access_key": "admin",
        }

    def client(self, service: str, **keys: str) -> Any:
        """A boto3 client of the account: signed with ``keys`` (``user_with_policy``'s) or else the admin keys."""
        make: Any = boto3.client
        return make(service, **{**self.admin, **keys})

    def enforce_iam(self) -> None:
        """From here on every call is checked against IAM (urllib: moto's in-process mock may be patching
        ``requests`` when a module also uses ``moto_account``)."""
        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/reset-auth", data=b"0", headers={"Content-Type": "text/plain"}, method="POST"
        )
        urllib.request.urlopen(request, timeout=10).read()  # a loopback URL of the process started here


@contextmanager
def start_local_aws() -> Iterator[LocalAws]:
    """Start the local AWS process (with none of this process's AWS settings), yield it, stop it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="unused", AWS_SECRET_ACCESS_KEY="unused", AWS_DEFAULT_REGION=REGION)
    config = {"region": REGION, "local_env": {}, "log_dir": tempfile.mkdtemp(), "task_root": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "batch_gateway_dev.local.aws_server", json.dumps(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=str(REPO_ROOT),
    )
    assert process.stdout and process.stdin
    try:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the local AWS process did not start (see its output above)")
        yield LocalAws(endpoint=json.loads(line)["endpoint"])
    finally:
        process.stdin.close()  # it serves until its standard input closes
        process.wait(timeout=15)


def user_with_policy(iam: Any, name: str, statement: dict[str, Any]) -> dict[str, str]:
    """Make IAM user ``name`` with one inline policy holding ``statement``; its keys as boto3 keyword arguments."""
    iam.create_user(UserName=name)
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=policy(statement))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
