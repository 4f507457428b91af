"""The fake model of scripts/try-agents, with when each request came and when its
answer ended.

    python bench/timed_model.py FAKE_LLM --log FILE [--port 0]

FAKE_LLM is `fake_llm.py` (a standard-library fake of the OpenAI chat and Responses APIs
and the Anthropic Messages API; ROOST_FAKE_LLM names it). Besides the fake's own line per
request, FILE gets two of this one's per POST, sharing an `id`: {"t", "id", "asked":
true, "path", "user" (the whole last user text), "tools" (how many the request offers),
"toolResult" (it carries the result of a tool the model called)}
as it arrives, and {"t", "id", "answered": true} once its answer has been written.
Prints `LISTENING <port>`.
"""

import argparse
import importlib.util
import itertools
import time
from http.server import ThreadingHTTPServer


def load(path):
    spec = importlib.util.spec_from_file_location("fake_llm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def serve(fake_path, log, port=0, more=None):
    """Serves the fake model on 127.0.0.1 (printing `LISTENING <port>`) until killed,
    each request logged as above; `more(body)`: fields of a bench's own for its
    `asked` line."""
    fake = load(fake_path)
    fake.CFG["log"] = log
    ids = itertools.count(1)

    class Timed(fake.Handler):
        def do_POST(self):
            self.request_id = next(ids)
            try:
                super().do_POST()
            finally:
                fake.log({"t": time.time(), "id": self.request_id, "answered": True})

        def _body(self):
            body = super()._body()
            fake.log({"t": time.time(), "id": self.request_id, "asked": True, "path": self.path,
                      "user": fake.last_user_text(body), "tools": len(fake.tool_names(body)),
                      "toolResult": fake.last_is_tool_result(body), **(more(body) if more else {})})
            return body

    server = ThreadingHTTPServer(("127.0.0.1", port), Timed)
    server.daemon_threads = True
    print(f"LISTENING {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fake_llm")
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    serve(args.fake_llm, args.log, args.port)


if __name__ == "__main__":
    main()
