"""The built-in audit scenario, one script per framework, run with the framework venv's python.

Every script runs the same conversation against the recording simulator: a user task that
takes two tool rounds (``lookup``, then ``forecast``, which the simulator asks for in the
tool result), the answer, then a second user turn in the same conversation. The variant (a
dialect and its ``store`` switch) is chosen by ``REASONWIRE_AUDIT_VARIANT``; endpoints, dummy
keys and model names come from the environment :func:`reasonwire.audit.run.environment`
sets. ``_common.py`` holds the shared task, tools and driver (standard library only: the
scripts run outside reasonwire's own environment). A script exits 0 when both turns ended,
2 for a variant it does not support, 1 on any failure (the exception is printed).
"""
