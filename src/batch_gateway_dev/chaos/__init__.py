"""Randomised fault schedules against the local stack (``make chaos``, decision 0122): a seed draws the jobs, faults
and actions (``scenario``), a run plays them on a local stack and checks what must hold at the end (``runner``,
``invariants``); a failure prints its seed and the command that replays it."""
