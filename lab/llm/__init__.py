"""A local fake of an OpenAI-compatible model server (see ``lab.llm.server``).

Tests and the demo point ``OPENAI_BASE_URL`` at it; the product cannot tell it from a real
server, so the real client, its retries and timeouts are exercised over HTTP.
"""

from lab.llm.server import MODES, FakeChatServer, schema_instance

__all__ = ["MODES", "FakeChatServer", "schema_instance"]
