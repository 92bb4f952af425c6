"""Real llama.cpp servers for these tests: one per template per session (built on first use)."""

from reasonwire.localserver.pytest_plugin import local_servers, qwen3_server

__all__ = ["local_servers", "qwen3_server"]
