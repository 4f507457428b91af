"""The fake model of scripts/try-agents, with the end of each answer in its log.

    python bench/timed_model.py FAKE_LLM --log FILE [--port 0]

FAKE_LLM is `fake_llm.py` (a standard-library fake of the OpenAI chat and Responses APIs
and the Anthropic Messages API; ROOST_FAKE_LLM names it). Its log has a line per
request, with its time `t`, as it arrives; this adds one line when the answer has been
written: {"t", "answered": true, "user"}. Prints `LISTENING <port>`.
"""

import argparse
import importlib.util
import time
from http.server import ThreadingHTTPServer


def load(path):
    spec = importlib.util.spec_from_file_location("fake_llm", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fake_llm")
    parser.add_argument("--log", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    fake = load(args.fake_llm)
    fake.CFG["log"] = args.log

    class Timed(fake.Handler):
        def do_POST(self):
            self.answered_user = None
            try:
                super().do_POST()
            finally:
                fake.log({"t": time.time(), "answered": True, "path": self.path, "user": self.answered_user})

        def _body(self):
            body = super()._body()
            self.answered_user = fake.choose_reply(body)[2][:200]
            return body

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Timed)
    server.daemon_threads = True
    print(f"LISTENING {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
