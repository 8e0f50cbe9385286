"""Wire-compatible Anthropic Message Batches and OpenAI Files + Batches servers for offline use.

The official SDKs work against them unchanged (`base_url=sim.url` / `sim.openai_base_url`); answers are
deterministic and labelled as simulated, and faults (429/500/503/529, dropped or timed-out connections after a
create) can be injected to exercise retry and double-submission handling.
"""

from batch_gateway_dev.simulators.server import SimulatorServer

__all__ = ["SimulatorServer"]
