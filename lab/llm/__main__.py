"""``python -m lab.llm [--port N] [--mode MODE] [--script FILE.json]``: run the fake model
server in the foreground (for the demo, or to point a real ``stratus`` at a scripted model)."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path

from lab.llm.server import MODES, FakeChatServer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.llm", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=MODES, default="script")
    parser.add_argument("--script", type=Path, help="a JSON list of script entries")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text()) if args.script else []
    server = FakeChatServer(script, mode=args.mode, host=args.host, port=args.port).start()
    print(f"OPENAI_BASE_URL={server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
