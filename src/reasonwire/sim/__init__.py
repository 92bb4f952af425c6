"""Reference provider simulator: all four dialects, with the documented reasoning rules.

Run it with ``reasonwire sim serve`` or in-process with :class:`SimServer` (a context manager
with ``base_url``), or the pytest fixture in :mod:`reasonwire.sim.pytest_plugin`.
Every model id is one behaviour (:data:`BEHAVIOURS`), each citing the WIRE.md rule it imitates:

==========================  ===========  ==================================================
model id                    dialect      behaviour
==========================  ===========  ==================================================
sim-chat-all                chat         reads every reasoning field in every turn
sim-qwen3                   chat         reasoning_content in the loop only (Qwen3 template)
sim-vllm                    chat         returns and reads only ``reasoning``
sim-chat-ignore             chat         accepts and ignores all reasoning fields
sim-r1                      chat         any reasoning field in input -> 400
sim-deepseek                chat         reasoning_content required after tool calls (400)
sim-llamacpp                chat         ``reasoning_content: null`` -> 500
sim-openrouter              chat         reasoning_details with reasoning.encrypted, usage.cost
sim-portal                  chat         lanes switch per call: ``gen-`` / ``chatcmpl-``
sim-grok-refuse             chat         "earlier reasoning" probe -> 403
sim-chat-filter             chat         "earlier reasoning" probe -> content_filter, no usage
sim-o-strict                chat         400 on ``temperature`` / ``max_tokens``
sim-plain                   chat         no reasoning; 400 on ``reasoning_effort``
sim-gpt                     responses    encrypted_content, store, pairing; 400 on context
sim-gpt-allturns            responses    accepts ``reasoning.context``; keeps every turn
sim-gpt-lowskip             responses    no reasoning item at effort ``low``
sim-claude                  anthropic    signed thinking; earlier turns stripped
sim-claude-preserve         anthropic    preserved thinking (earlier turns billed)
sim-claude-redacted         anthropic    redacted_thinking blocks
sim-gemini                  gemini       thoughtSignature required on first functionCall
sim-gemini-25               gemini       400 on ``thinkingLevel``
==========================  ===========  ==================================================

Gemini ``:streamGenerateContent`` answers SSE with ``?alt=sse`` and otherwise (Gemini's
default, ``alt=json``) one JSON array whose elements are flushed one by one (``[{..}``, then
``,\r\n{..}`` per chunk, then ``]``): the same payloads either way.

Catalog extras (``GET /v1/models``): ``~sim/chat-latest``, ``~sim/claude-latest``,
``sim-chat-all:batch``, ``sim-gpt:batch`` (aliases served by the target behaviour) and the
catalog-only non-text models ``sim-image``, ``sim-tts`` (404 on every endpoint).

Faults: header ``x-sim-fault`` or model suffix ``model@fault``; fault is ``429`` or
``429:<retry-after seconds>``, ``500``, ``502``, ``503``, ``504``, ``slow:<ms>``, ``drop``,
``malformed``.

WIRE.md rules without a behaviour, and why:

=====================================================  ======================================
rule                                                   why no behaviour
=====================================================  ======================================
Gemini OpenAI-compat ``extra_content.google``          a gateway field of a fifth API
                                                       surface; the chat dialect tests cover
                                                       extra fields in general
``reasoning_content: ""`` wanted on every message      field reports only, unconfirmed
Anthropic signature prefixes (``Eq`` / ``CAIS``)       a client must not assume any prefix;
                                                       ours has none of either
Streamed ``reasoning_details`` merge before replay     emitted (fragments by type/index); the
                                                       merge is the client's job
DeepSeek Responses raw-CoT replay (content items)      items without id/seal are read as text
                                                       by every responses model (no own id)
=====================================================  ======================================
"""

from __future__ import annotations

from reasonwire._extras import require as _require

_require("sim")  # starlette, uvicorn, cryptography: one line naming the extra when absent
from reasonwire.sim.behaviours import BEHAVIOURS, Behaviour, FieldTruth  # noqa: E402
from reasonwire.sim.server import SimServer  # noqa: E402

__all__ = ["BEHAVIOURS", "Behaviour", "FieldTruth", "SimServer"]
