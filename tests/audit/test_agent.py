"""reasonwire's own agent through the audit: kept exact in every cell it supports, in the loop
and across turns (audited with a keep policy, as a consumption matrix gives it for a model
that reads earlier reasoning), every request accepted, streamed and not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reasonwire.audit.frameworks import VARIANTS, get_framework, run_framework
from reasonwire.audit.report import build_cells

AGENT = get_framework("reasonwire-agent")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("variant", list(AGENT.variants))
def test_agent_keeps_every_carrier_in_the_loop(variant: str, stream: bool) -> None:
    env = {"REASONWIRE_AUDIT_STREAM": "1" if stream else "0"}
    run = run_framework(AGENT, variant, Path(sys.executable), timeout=120, env=env)
    assert run.exit_code == 0, run.output_tail
    reqs = [r for r in run.trace.requests if r.dialect]
    assert len(reqs) == 6  # two tool rounds and the answer, twice
    assert all(r.status == 200 for r in reqs), [(r.status, r.error) for r in reqs]
    assert all(r.stream is stream for r in reqs)
    loop = [o for r in reqs for o in r.observations if o.scope == "in_loop"]
    assert loop, "the simulator hands out carriers on every step"
    assert {o.status for o in loop} <= {"kept", "server"}, [
        (o.atom.kind, o.status, o.note) for o in loop if o.status not in ("kept", "server")
    ]
    (cell,) = build_cells(run, 0)
    assert cell["column"] == VARIANTS[variant]
    assert cell["verdict"] == "kept"
    assert cell["wire_variants"] == [VARIANTS[variant]]
    cross = [o for r in reqs for o in r.observations if o.scope == "cross_turn"]
    assert cross
    assert {o.status for o in cross} <= {"kept", "server"}, [
        (o.atom.kind, o.status, o.note) for o in cross if o.status not in ("kept", "server")
    ]
