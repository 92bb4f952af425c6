from reasonwire._extras import require as _require

_require("govern")

# ``reasonwire.govern.carry`` is the function; the module's other names are exported here too.
from reasonwire.govern.carry import AsyncCarryTransport as AsyncCarryTransport  # noqa: E402
from reasonwire.govern.carry import Carry as Carry  # noqa: E402
from reasonwire.govern.carry import CarryTransport as CarryTransport  # noqa: E402
from reasonwire.govern.carry import carry as carry  # noqa: E402

__all__ = ["AsyncCarryTransport", "Carry", "CarryTransport", "carry"]
