"""Development tooling that never ships in the wheel or a Lambda bundle: the local stack (``local``) and the
wire-compatible provider simulators (``simulators``). Installed with the dev venv of a clone (``uv sync``)."""
