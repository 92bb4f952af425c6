"""Responses with store=true: every output item is stored, so ``item_reference`` input entries
to ``rs_``, ``fc_`` and ``msg_`` items all resolve, through the official openai SDK.

Sources of the expected values (not the simulator's code):

- OpenAI API reference, ``ItemReference``: "An internal identifier for an item to reference"
  (``{"type": "item_reference", "id": ...}``), one of the ``input`` item kinds; the
  conversation-state guide: with ``store`` the response's output is kept server-side.
- The Vercel AI SDK (``@ai-sdk/openai`` with store=true) replaces every earlier assistant item
  (reasoning, function call, message) by such a reference (issue 24).
- The not-found answer, as OpenAI words it in public issue threads (anomalyco/opencode#7724,
  earendil-works/pi#5059): 404, ``invalid_request_error``, ``param: input``.
- WIRE.md > Responses API, "Pairing": an item replayed without the reasoning item it followed
  fails with "provided without its required 'reasoning' item" (OpenAI does not document the
  rule; the error text is from public threads, e.g. continuedev/continue#9991 for a ``msg_``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from reasonwire.sim.server import SimServer

TASK = "Find the population of Lyon."
PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
KEY = "sk-sim-not-a-real-key"
TOOLS: Any = [
    {
        "type": "function",
        "name": "lookup",
        "strict": False,
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
]
NOT_FOUND = (
    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. "
    "Try again with `store` set to true, or remove this item from your input."
)


def ref(item_id: str) -> dict[str, str]:
    return {"type": "item_reference", "id": item_id}


@pytest.fixture
def client() -> Iterator[openai.OpenAI]:
    """A fresh simulator per test: its store starts empty (ids are deterministic, so a shared
    server would already hold the items another test stored)."""
    with SimServer(seed=0) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)


def create(client: openai.OpenAI, items: list[Any], store: bool = True) -> Any:
    return client.responses.create(
        model="sim-gpt",
        input=items,
        tools=TOOLS,
        store=store,
        reasoning={"effort": "medium", "summary": "auto"},
    )


def test_references_to_rs_fc_and_msg_are_accepted(client: openai.OpenAI) -> None:
    first = create(client, [{"role": "user", "content": TASK}])
    rs, fc = first.output
    assert (rs.type, fc.type) == ("reasoning", "function_call")
    assert rs.id.startswith("rs_") and fc.id.startswith("fc_")
    items: list[Any] = [
        {"role": "user", "content": TASK},
        ref(rs.id),
        ref(fc.id),
        {"type": "function_call_output", "call_id": fc.call_id, "output": "522000. " + PROBE},
    ]
    second = create(client, items)
    rs2, msg = second.output
    assert rs2.type == "reasoning" and msg.type == "message" and msg.id.startswith("msg_")
    # the referenced reasoning item entered the prompt (sim-gpt reads it in the loop): the
    # probe is answered with the word, which a request without it answers NONE
    assert second.output_text != "NONE"
    items += [ref(rs2.id), ref(msg.id), {"role": "user", "content": "Thanks."}]
    third = create(client, items)  # a reference to a message item it handed out itself
    assert third.status == "completed"


def test_reference_to_an_id_never_handed_out_is_404(client: openai.OpenAI) -> None:
    first = create(client, [{"role": "user", "content": TASK}])
    ghost = "msg_" + "0" * 50
    with pytest.raises(openai.NotFoundError) as exc:
        create(client, [{"role": "user", "content": TASK}, *map(ref, [first.output[0].id, ghost])])
    assert exc.value.status_code == 404
    assert exc.value.body == {
        "message": NOT_FOUND.format(id=ghost),
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def test_store_false_items_cannot_be_referenced(client: openai.OpenAI) -> None:
    """The boundary of "store keeps every item": with store=false nothing is kept."""
    first = create(client, [{"role": "user", "content": TASK}], store=False)
    for item in first.output:
        with pytest.raises(openai.NotFoundError) as exc:
            create(client, [{"role": "user", "content": TASK}, ref(item.id)])
        assert exc.value.body["message"] == NOT_FOUND.format(id=item.id)  # type: ignore[index]


def test_referenced_item_without_its_reasoning_item_is_the_pairing_error(
    client: openai.OpenAI,
) -> None:
    first = create(client, [{"role": "user", "content": TASK}])
    rs, fc = first.output
    out = {"type": "function_call_output", "call_id": fc.call_id, "output": "522000."}
    with pytest.raises(openai.BadRequestError) as exc:
        create(client, [{"role": "user", "content": TASK}, ref(fc.id), out])
    assert exc.value.body["message"] == (  # type: ignore[index]
        f"Item '{fc.id}' of type 'function_call' was provided without its required "
        f"'reasoning' item: '{rs.id}'."
    )
    # the reasoning item may come whole or by reference, the call likewise
    whole = rs.model_dump(exclude_none=True)
    assert create(client, [{"role": "user", "content": TASK}, whole, ref(fc.id), out])
