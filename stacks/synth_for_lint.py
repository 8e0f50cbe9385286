"""``python -m stacks.synth_for_lint OUTDIR [key=value ...]``: write OUTDIR/BatchGatewayStack.template.json, bundling
skipped, with optional context values (as ``cdk synth -c key=value``, e.g. ``kms=customer``)."""

from __future__ import annotations

import sys
from pathlib import Path

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app


def main(argv: list[str]) -> int:
    if not argv or not all("=" in arg for arg in argv[1:]):
        print("usage: python -m stacks.synth_for_lint OUTDIR [key=value ...]", file=sys.stderr)
        return 2
    outdir = Path(argv[0])
    context = dict(arg.split("=", 1) for arg in argv[1:])
    build_app({**SKIP_BUNDLING, **context}, outdir=str(outdir)).synth()
    template = outdir / f"{constants.STACK_NAME}.template.json"
    if not template.is_file():
        print(f"synth wrote no {template}", file=sys.stderr)
        return 1
    print(template)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
