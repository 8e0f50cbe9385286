"""Development tooling that never ships in the wheel or a Lambda bundle: the local stack (``local``), the
wire-compatible provider simulators (``simulators``) and the in-memory fakes of the ports (``fakes``). Installed with
the dev venv of a clone (``uv sync``)."""
