"""What the consumption method defines, shared by the harness, the template scan and the agent.

- :mod:`reasonwire.method.fixture`: the seeded trace and canary, the positions, the tool;
- :mod:`reasonwire.method.verdicts`: the outcome and verdict words and the thresholds;
- :mod:`reasonwire.method.matrix`: ``matrix.json`` as typed rows, and its reader;
- :mod:`reasonwire.method.codec`: the one JSON codec of every record class.

A neutral layer: it imports nothing of reasonwire but ``reasonwire.wire`` and
``reasonwire.errors``, so the agent can read a matrix without the harness.
"""
