from reasonwire._extras import require

require("localserver")
