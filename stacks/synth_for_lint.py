"""``python -m stacks.synth_for_lint OUTDIR``: write OUTDIR/BatchGatewayStack.template.json, bundling skipped."""

from __future__ import annotations

import sys
from pathlib import Path

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m stacks.synth_for_lint OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(argv[0])
    build_app(dict(SKIP_BUNDLING), outdir=str(outdir)).synth()
    template = outdir / f"{constants.STACK_NAME}.template.json"
    if not template.is_file():
        print(f"synth wrote no {template}", file=sys.stderr)
        return 1
    print(template)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
