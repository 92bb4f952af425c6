from reasonwire._extras import require as _require

_require("localserver")
